/**
 * Every TypeScript and YAML block of README.md and docs/*.md is code a user pastes: here the TypeScript ones
 * type-check under the README's tsconfig.json (strict) against the package's public entries (`kafka-lanes`,
 * `kafka-lanes/operator`, ... mapped to their sources in the checkout), and each serverless.yml (whole, or a
 * fragment merged into one) packages with the real framework. The conventions a document follows, and the parsing
 * of the JSON and YAML blocks, are in test/support/doc-snippets.ts and its unit test.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { entrySources, fragmentModule, mergeDeep, projectFiles, readSnippets, stripJsonComments, type Snippet } from '../support/doc-snippets';
import { ofType, ROOT, serverless, service, template } from './support/serverless';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const parseYaml = require('osls/lib/utils/fs/parse') as (path: string, contents: Buffer) => unknown;

jest.setTimeout(600_000);

const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const SNIPPETS = new Map(DOCS.map((doc) => [doc, readSnippets(readFileSync(join(ROOT, doc), 'utf8'), doc).snippets]));
const README = SNIPPETS.get('README.md')!;
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
const ENTRIES = entrySources(MANIFEST.name, MANIFEST.exports, (path) => existsSync(join(ROOT, path)));

/** Where a file of the scratch projects came from: `docs/options.md:55`. */
const origins = new Map<string, string>();
let scratch: string;

beforeAll(() => {
  mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
  scratch = mkdtempSync(join(ROOT, '.sls-tmp', 'snippets-'));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Writes `text` as `path` of the scratch directory and remembers which block it is. */
function write(path: string, text: string, origin: Snippet): string {
  const file = join(scratch, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  origins.set(file, `${origin.doc}:${origin.line}`);
  return file;
}

/** The compiler options a user's project has: the README's tsconfig.json, with the package's entries in the checkout. */
function compilerOptions(doc: string): ts.CompilerOptions {
  const tsconfig = projectFiles(README, SNIPPETS.get(doc)!).get('tsconfig.json');
  if (tsconfig === undefined) throw new Error('README.md: expected a `// tsconfig.json` block, the compiler options every TypeScript block is checked with');
  const json = JSON.parse(stripJsonComments(tsconfig.text)) as { compilerOptions: object };
  const { options, errors } = ts.convertCompilerOptionsFromJson(json.compilerOptions, scratch);
  if (errors.length > 0) throw new Error(`${tsconfig.doc}:${tsconfig.line}: ${errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, '\n')).join('; ')}`);
  const paths = Object.fromEntries([...ENTRIES].map(([entry, source]) => [entry, [join(ROOT, source)]]));
  return { ...options, paths, noEmit: true };
}

describe('the TypeScript blocks of README.md and docs/', () => {
  it('type-check under strict against the public entries, each whole file in its project and each fragment as a module', () => {
    // Prepare: one project per document, the README's whole files under its own, its fragments beside them.
    const programs = new Map<string, { options: ts.CompilerOptions; files: string[] }>();
    for (const [doc, snippets] of SNIPPETS) {
      const base = `${doc.replace(/[/\\]/g, '-')}`;
      // The README's whole files join a document's project only when the document has whole files of its own
      // (which may import them); a document of fragments alone does not check the README's files again.
      const own = snippets.some((snippet) => snippet.lang === 'ts' && snippet.path !== undefined);
      const whole = [...projectFiles(own || doc === 'README.md' ? README : [], snippets).values()].filter((snippet) => snippet.lang === 'ts');
      const fragments = snippets.filter((snippet) => snippet.lang === 'ts' && snippet.path === undefined);
      if (whole.length === 0 && fragments.length === 0) continue;
      const files = [
        ...whole.map((snippet) => write(join(base, snippet.path!), snippet.text, snippet)),
        ...fragments.map((snippet) => {
          const { name, text } = fragmentModule(snippet);
          return write(join(base, name), text, snippet);
        }),
      ];
      programs.set(doc, { options: compilerOptions(doc), files });
    }
    const checked = [...origins.values()];
    // The README's handler test imports vitest, which this repository does not install: its functions are declared
    // from jest's own (the consumer-path test runs the real vitest on the same file).
    const vitest = join(scratch, 'vitest.d.ts');
    writeFileSync(vitest, "declare module 'vitest' {\n  export { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, jest as vi, test } from '@jest/globals';\n}\n");

    // Act
    // Documents with the same compiler options share one program: the package's sources are checked once.
    const byOptions = new Map<string, { options: ts.CompilerOptions; files: string[] }>();
    for (const { options, files } of programs.values()) {
      const key = JSON.stringify(options);
      byOptions.set(key, { options, files: [...(byOptions.get(key)?.files ?? [vitest]), ...files] });
    }
    const problems = [...byOptions.values()].flatMap(({ options, files }) => {
      const program = ts.createProgram(files, options);
      return files.filter((file) => file !== vitest).flatMap((file) => {
        const source = program.getSourceFile(file)!;
        const diagnostics = [
          ...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source),
          ...(options.declaration ? program.getDeclarationDiagnostics(source) : []),
        ];
        return diagnostics.map((diagnostic) => {
          const { line } = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
          return `${origins.get(file)} (${relative(scratch, file)}:${line + 1}): ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
        });
      });
    });

    // Assess
    expect(problems).toEqual([]);
    // Every TypeScript block of every document was among them.
    const blocks = [...SNIPPETS.values()].flat().filter((snippet) => snippet.lang === 'ts');
    expect(blocks.filter((snippet) => !checked.includes(`${snippet.doc}:${snippet.line}`))).toEqual([]);
    console.log(`${blocks.length} TypeScript blocks type-checked: ${blocks.map((snippet) => `${snippet.doc}:${snippet.line}`).join(', ')}`);
  });
});

describe('the serverless.yml blocks of README.md and docs/', () => {
  /** A document's services to package: its own whole serverless.yml, and each fragment merged into its project's. */
  const services = [...SNIPPETS].flatMap(([doc, snippets]) => {
    const project = projectFiles(README, snippets);
    const own = snippets.filter((snippet) => snippet.lang === 'yaml' && (snippet.path === 'serverless.yml' || snippet.merge === 'serverless.yml'));
    return own.map((snippet) => ({ name: `${doc}:${snippet.line}`, snippet, project }));
  });

  it('are found: the README quick start at least', () => {
    expect(services.map(({ name }) => name)).toContainEqual(expect.stringMatching(/^README\.md:\d+$/));
  });

  it.each(services)('$name packages with `serverless package --stage prod`', async ({ snippet, project }) => {
    // Prepare: the project's files, its serverless.yml (with the fragment merged in), and the package as a user
    // installs it: node_modules/kafka-lanes, each entry re-exporting its source in the checkout.
    const whole = project.get('serverless.yml');
    if (whole === undefined) throw new Error(`${snippet.doc}:${snippet.line}: no serverless.yml to merge into (the README's is the default)`);
    const parsed = parseYaml('serverless.yml', Buffer.from(whole.text));
    // JSON is YAML: the merged service is written as JSON, with the CloudFormation tags already read as functions.
    const yml = snippet.path === undefined ? JSON.stringify(mergeDeep(parsed, parseYaml('serverless.yml', Buffer.from(snippet.text))), null, 2) : snippet.text;
    const files: Record<string, string> = {
      'package.json': JSON.stringify({ name: 'shop', private: true }),
      'node_modules/kafka-lanes/package.json': JSON.stringify({
        name: MANIFEST.name,
        exports: { ...Object.fromEntries([...ENTRIES.keys()].map((entry, i) => [`.${entry.slice(MANIFEST.name.length)}`, `./entry-${i}.ts`])), './serverless': './serverless.cjs' },
      }),
      'node_modules/kafka-lanes/serverless.cjs': `module.exports = require(${JSON.stringify(join(ROOT, 'src', 'serverless', 'plugin.cjs'))});\n`,
      ...Object.fromEntries([...ENTRIES.values()].map((source, i) => [`node_modules/kafka-lanes/entry-${i}.ts`, `export * from ${JSON.stringify(join(ROOT, source.replace(/\.ts$/, '')))};\n`])),
      ...Object.fromEntries([...project.values()].filter((file) => file.path !== 'serverless.yml').map((file) => [file.path!, file.text])),
    };
    const dir = service(yml, files);

    // Act
    const { code, output } = await serverless(dir, ['package', '--stage', 'prod']);

    // Assess
    expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });
    expect(ofType(template(join(dir, '.serverless')), 'AWS::Lambda::EventSourceMapping').length).toBeGreaterThan(0);
    rmSync(dir, { recursive: true, force: true });
  });
});
