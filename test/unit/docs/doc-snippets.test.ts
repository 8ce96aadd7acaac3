import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  entrySources, fragmentModule, inlineCommands, mergeDeep, projectFiles, readSnippets, shellCommands, shellWords, stripJsonComments, unknownInCall,
  unknownInCommand, type CommandTree,
} from '../../support/doc-snippets';
import type { Command } from 'commander';
import { buildProgram } from '../../../src/cli/main';

// The framework's own YAML loader (js-yaml with the CloudFormation tags), as `serverless package` reads a file.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parseYaml = require('osls/lib/utils/fs/parse') as (path: string, contents: Buffer) => unknown;

const ROOT = join(__dirname, '..', '..', '..');
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const read = (doc: string): ReturnType<typeof readSnippets> => readSnippets(readFileSync(join(ROOT, doc), 'utf8'), doc);

describe('readSnippets', () => {
  it('reads each block: its language, the file its first line names, its line and its text without indentation', () => {
    // Prepare
    const markdown = ['# A guide', '', '```ts', '// src/orders.ts', 'export const a = 1;', '```', '', '- a list item:', '', '  ```yaml', '  functions:', '    orders: {}', '  ```', ''].join('\n');

    // Act
    const { snippets, problems } = readSnippets(markdown, 'docs/guide.md');

    // Assess
    expect(problems).toEqual([]);
    expect(snippets).toEqual([
      { doc: 'docs/guide.md', line: 3, lang: 'ts', path: 'src/orders.ts', text: '// src/orders.ts\nexport const a = 1;\n', prelude: undefined, merge: undefined },
      { doc: 'docs/guide.md', line: 10, lang: 'yaml', path: undefined, text: 'functions:\n  orders: {}\n', prelude: undefined, merge: undefined },
    ]);
  });

  it('refuses a block without a language or with one it does not check, and a block never closed, naming the line', () => {
    // Act
    const { snippets, problems } = readSnippets('```\nnpm test\n```\n\n```js\nx()\n```\n\n```ts\nlet a = 1;\n', 'README.md');

    // Assess
    expect(snippets).toEqual([]);
    expect(problems).toEqual([
      'README.md:1: a code block names its language, one of ts, yaml, json, jsonc, sh, text (`text` for what is not code); found ""',
      'README.md:5: a code block names its language, one of ts, yaml, json, jsonc, sh, text (`text` for what is not code); found "js"',
      'README.md:9: the block is never closed (expected a line ```)',
    ]);
  });

  it('gives a ts fragment the prelude above it and a yaml fragment its merge target', () => {
    // Prepare
    const markdown = [
      '<!-- snippet: prelude', 'declare const psp: { charge(n: number): Promise<string> };', '-->', '```ts', 'await psp.charge(1);', '```',
      '<!-- snippet: merge serverless.yml -->', '```yaml', 'provider: { memorySize: 512 }', '```',
    ].join('\n');

    // Act
    const { snippets, problems } = readSnippets(markdown, 'docs/a.md');

    // Assess
    expect(problems).toEqual([]);
    expect(snippets.map(({ prelude, merge }) => ({ prelude, merge }))).toEqual([
      { prelude: 'declare const psp: { charge(n: number): Promise<string> };\n', merge: undefined },
      { prelude: undefined, merge: 'serverless.yml' },
    ]);
    expect(fragmentModule(snippets[0]!)).toEqual({
      name: 'snippets/docs-a.md-4.ts',
      text: 'declare const psp: { charge(n: number): Promise<string> };\nawait psp.charge(1);\nexport {};\n',
    });
  });

  it('refuses a directive above a block it cannot apply to', () => {
    // Act
    const { problems } = readSnippets('<!-- snippet: prelude\ndeclare const a: 1;\n-->\n```yaml\na: 1\n```\n<!-- snippet: merge tsconfig.json -->\n```yaml\na: 1\n```\n', 'docs/a.md');

    // Assess
    expect(problems).toEqual([
      'docs/a.md:4: a `snippet: prelude` comment belongs above a ts fragment, not a yaml',
      'docs/a.md:8: `snippet: merge` names the file it merges into, serverless.yml; found "tsconfig.json"',
    ]);
  });
});

describe('projectFiles', () => {
  it("takes the README's whole files and lets a document replace one of its own path", () => {
    // Prepare
    const readme = readSnippets('```ts\n// src/orders.ts\nexport const a = 1;\n```\n```yaml\n# serverless.yml\nservice: shop\n```\n', 'README.md').snippets;
    const own = readSnippets('```ts\n// src/orders.ts\nexport const a = 2;\n```\n```ts\nconst fragment = 1;\n```\n', 'docs/a.md').snippets;

    // Act
    const files = projectFiles(readme, own);

    // Assess
    expect([...files].map(([path, snippet]) => [path, snippet.doc])).toEqual([['src/orders.ts', 'docs/a.md'], ['serverless.yml', 'README.md']]);
  });
});

describe('stripJsonComments, mergeDeep, entrySources', () => {
  it('takes comments out of JSON but not what looks like one inside a string', () => {
    expect(JSON.parse(stripJsonComments('// tsconfig.json\n{ "a": "http://x", /* b */ "c": 1 // d\n}'))).toEqual({ a: 'http://x', c: 1 });
  });

  it('merges objects key by key and replaces anything else', () => {
    expect(mergeDeep({ a: { b: 1, c: [1] }, d: 1 }, { a: { c: [2], e: 3 } })).toEqual({ a: { b: 1, c: [2], e: 3 }, d: 1 });
  });

  it("maps each public entry of package.json to its source, whatever the build's layout", () => {
    // Prepare
    const sources = new Set(['src/index.ts', 'src/operator.ts', 'src/testing/index.ts']);
    const exports = {
      '.': { types: './dist/src/index.d.ts', default: './dist/src/index.js' },
      './operator': { types: './dist/types/operator.d.ts', import: './dist/operator.mjs' },
      './testing': { import: { types: './dist/types/testing.d.mts', default: './dist/testing.mjs' } },
      './serverless': './src/serverless/plugin.cjs',
    };

    // Act
    const entries = entrySources('kafka-lanes', exports, (path) => sources.has(path));

    // Assess
    expect([...entries]).toEqual([['kafka-lanes', 'src/index.ts'], ['kafka-lanes/operator', 'src/operator.ts'], ['kafka-lanes/testing', 'src/testing/index.ts']]);
    expect(() => entrySources('kafka-lanes', { './gone': { types: './dist/gone.d.ts' } }, () => false)).toThrow(
      'package.json exports: no source for kafka-lanes/gone (its types ./dist/gone.d.ts); looked for src/dist/gone.ts, src/dist/gone/index.ts, src/gone.ts, src/gone/index.ts',
    );
  });
});

describe("the repository's documents", () => {
  it.each(DOCS)('%s: every block follows the conventions', (doc) => {
    expect(read(doc).problems).toEqual([]);
  });

  it.each(DOCS)('%s: every json block parses, every jsonc block once its comments are out, every yaml block with the CloudFormation tags', (doc) => {
    // Act
    const failures = read(doc).snippets.flatMap((snippet) => {
      try {
        if (snippet.lang === 'json') JSON.parse(snippet.text);
        if (snippet.lang === 'jsonc') JSON.parse(stripJsonComments(snippet.text));
        if (snippet.lang === 'yaml') parseYaml(snippet.path ?? 'snippet.yml', Buffer.from(snippet.text));
        return [];
      } catch (error) {
        return [`${doc}:${snippet.line}: ${(error as Error).message}`];
      }
    });

    // Assess
    expect(failures).toEqual([]);
  });

  it("the README holds the quick start's files: tsconfig.json, a handler and a serverless.yml", () => {
    // Act
    const paths = read('README.md').snippets.flatMap((snippet) => snippet.path ?? []);

    // Assess
    expect(paths).toEqual(expect.arrayContaining(['tsconfig.json', 'src/orders.ts', 'serverless.yml']));
  });

  it('maps every public entry of the package to a source file of the checkout', () => {
    // Prepare
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };

    // Act
    const entries = entrySources(manifest.name, manifest.exports, (path) => existsSync(join(ROOT, path)));

    // Assess
    expect(entries.get('kafka-lanes')).toBe('src/index.ts');
  });
});

describe('shell blocks', () => {
  const tree: CommandTree = {
    name: 'kafka-lanes', options: [], commands: [
      { name: 'topics', options: [], commands: [{ name: 'ensure', options: ['--group', '--topic', '--tiers'], commands: [] }] },
      { name: 'status', options: ['--json'], commands: [] },
    ],
  };

  it('splits a command into words as a shell does, quotes grouped, the comment dropped', () => {
    expect(shellWords(`npx kafka-lanes produce orders --value '{"a": 1}' --key "c 1"   # one record`)).toEqual(['npx', 'kafka-lanes', 'produce', 'orders', '--value', '{"a": 1}', '--key', 'c 1']);
    expect(shellWords('# a comment line')).toEqual([]);
  });

  it('reads a block line by line, a line ending with a backslash going on, each with its line in the document', () => {
    // Prepare
    const [block] = readSnippets('text\n\n```sh\n# first\nnpm ci \\\n  --no-audit\nnpm test\n```\n', 'README.md').snippets;

    // Act
    const commands = shellCommands(block!);

    // Assess
    expect(commands).toEqual([
      { doc: 'README.md', line: 5, words: ['npm', 'ci', '--no-audit'] },
      { doc: 'README.md', line: 7, words: ['npm', 'test'] },
    ]);
  });

  it('names the command or option a CLI call uses that the CLI does not know', () => {
    expect(unknownInCall(tree, ['topics', 'ensure', '--group', '<group>', '--topic=orders:3', '--tiers', '5s'])).toEqual([]);
    expect(unknownInCall(tree, ['status', 'g', '--watch'])).toEqual(['kafka-lanes status: no option --watch']);
    expect(unknownInCall(tree, ['topics', 'create'])).toEqual(['kafka-lanes topics: expected one of its commands (ensure), got "create"']);
    expect(unknownInCall(tree, ['local', 'up'])).toEqual(['kafka-lanes: expected one of its commands (topics, status), got "local"']);
    expect(unknownInCall(tree, ['--help'])).toEqual([]);
  });
});

describe('the commands the documents show', () => {
  const tree: CommandTree = {
    name: 'kafka-lanes', options: [], commands: [{ name: 'local', options: [], commands: [{ name: 'up', options: ['--kafka-port'], commands: [] }] }],
  };
  const scripts = { start: 'tsx start.ts', test: 'jest', cli: 'tsx src/cli/bin.ts', 'local:up': 'tsx src/cli/bin.ts local up' };

  it('finds the npx kafka-lanes and npm commands of inline code, outside fenced blocks, with their lines', () => {
    // Act
    const commands = inlineCommands('Run `npx kafka-lanes local up` then `npm run local:up`; `kafka-lanes status` alone is prose.\n```sh\nnpm run gone\n```\n`npm test`\n', 'README.md');

    // Assess
    expect(commands).toEqual([
      { doc: 'README.md', line: 1, words: ['npx', 'kafka-lanes', 'local', 'up'] },
      { doc: 'README.md', line: 1, words: ['npm', 'run', 'local:up'] },
      { doc: 'README.md', line: 5, words: ['npm', 'test'] },
    ]);
  });

  it('names a package script that does not exist and a CLI command or option that does not, through npx or npm run cli', () => {
    expect(unknownInCommand(tree, scripts, ['npm', 'run', 'local:up'])).toEqual([]);
    expect(unknownInCommand(tree, scripts, ['npm', 'start', '--', '--records', '200'])).toEqual([]);
    expect(unknownInCommand(tree, scripts, ['npm', 'ci'])).toEqual([]);
    expect(unknownInCommand(tree, scripts, ['npm', 'run', 'local:start'])).toEqual(['npm run local:start: no such script in package.json']);
    expect(unknownInCommand(tree, scripts, ['npx', 'kafka-lanes', 'local', 'up', '--redis-port', '1'])).toEqual(['kafka-lanes local up: no option --redis-port']);
    expect(unknownInCommand(tree, scripts, ['npm', 'run', 'cli', '--', 'local', 'start'])).toEqual(['kafka-lanes local: expected one of its commands (up), got "start"']);
    expect(unknownInCommand(tree, scripts, ['npm', 'frobnicate'])).toEqual([expect.stringMatching(/^npm frobnicate: not an npm command this check knows/)]);
  });

  it.each([...DOCS, 'CHANGELOG.md'])('%s: every `npx kafka-lanes …` and `npm …` command names a real CLI command and option, or package script', (doc) => {
    // Prepare: the CLI as it is built, and the package's scripts.
    const toTree = (command: Command): CommandTree => ({
      name: command.name(),
      options: command.options.flatMap((option) => option.long ?? []),
      commands: command.commands.map(toTree),
    });
    const cli = toTree(buildProgram());
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const markdown = readFileSync(join(ROOT, doc), 'utf8');

    // Act
    const commands = [
      ...readSnippets(markdown, doc).snippets.filter((snippet) => snippet.lang === 'sh').flatMap(shellCommands),
      ...inlineCommands(markdown, doc),
    ];
    const problems = commands.flatMap(({ line, words }) => unknownInCommand(cli, manifest.scripts, words).map((problem) => `${doc}:${line}: ${problem}`));

    // Assess
    expect(problems).toEqual([]);
  });
});
