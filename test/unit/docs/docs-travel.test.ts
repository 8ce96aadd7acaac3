/**
 * The docs travel with the package: a user of `node_modules/kafka-lanes` opens every file the README and docs/ link
 * to (the package ships it), every repository path they cite (`test/...`, `src/...`) is a link to the repository, and
 * every message of the code that sends the reader to a doc names it where the package puts it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { DOCS } from '../../../src/serverless/config';

const ROOT = join(__dirname, '..', '..', '..');
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[]; repository: { url: string } };
const REPOSITORY = PACKAGE.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
const DOC_FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
/** What npm puts in every package whatever `files` says. */
const ALWAYS = ['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json'];

/** `path` (relative to the repository) is in the packed package: `files` names it, a folder of it, or a `*` pattern. */
function shipped(path: string): boolean {
  return ALWAYS.includes(path) || PACKAGE.files.some((entry) => {
    if (entry.endsWith('/')) return path.startsWith(entry);
    if (entry.includes('*')) return new RegExp(`^${entry.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]*')}$`).test(path);
    return path === entry;
  });
}

/** The lines of a markdown document outside fenced code blocks, with their numbers. */
function prose(doc: string): Array<[number, string]> {
  let fenced = false;
  return readFileSync(join(ROOT, doc), 'utf8').split('\n').flatMap((line, i): Array<[number, string]> => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return [];
    }
    return fenced ? [] : [[i + 1, line]];
  });
}

describe('the docs a user of the package opens', () => {
  it('ships docs/, and every file the README and docs link to', () => {
    expect(shipped('docs/deploy.md')).toBe(true);
    const broken: string[] = [];
    for (const doc of DOC_FILES) {
      for (const [line, text] of prose(doc)) {
        for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
          const path = target!.split('#')[0]!;
          if (/^[a-z]+:/.test(path) || path === '') continue;
          const inRepository = relative(ROOT, join(ROOT, dirname(doc), path));
          if (!existsSync(join(ROOT, inRepository)) || !shipped(inRepository)) broken.push(`${doc}:${line}: ${target} (${inRepository})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('cites a path of the repository the package does not hold only as a link to it, or in code of a page about a clone of it', () => {
    const stray: string[] = [];
    const stale: string[] = [];
    const linked = new RegExp(`\\]\\(${REPOSITORY.replace(/[./]/g, '\\$&')}/(?:blob|tree)/main/([^)#]+)\\)`, 'g');
    for (const doc of DOC_FILES) {
      // A page that links the repository itself is about a clone of it: its commands and code name the clone's files.
      const aboutClone = readFileSync(join(ROOT, doc), 'utf8').includes(`](${REPOSITORY})`);
      const lines = prose(doc);
      const text = lines.map(([, line]) => line).join('\n');
      const lineOf = (index: number): number => lines[text.slice(0, index).split('\n').length - 1]![0];
      for (const match of text.matchAll(linked)) {
        if (!existsSync(join(ROOT, match[1]!))) stale.push(`${doc}:${lineOf(match.index)}: ${match[1]}`);
      }
      // What is left once the links to the repository (and a clone's code) are taken out, the same length.
      const blank = (part: string): string => part.replace(/[^\n]/g, ' ');
      const rest = text
        .replace(/\[`[^`]*`\]\(https:\/\/[^)]*\)/g, blank)
        .replace(/https:\/\/[^\s)]+/g, blank)
        .replace(/`[^`]*`/g, (code) => (aboutClone ? blank(code) : code));
      for (const match of rest.matchAll(/(?<![\w./-])((?:src|test|bench|functions|infra|\.ci)\/[\w./-]*[\w/])/g)) {
        const path = match[1]!.replace(/\/$/, '');
        if (existsSync(join(ROOT, path)) && !shipped(path) && !shipped(`${path}/network.yml`)) stray.push(`${doc}:${lineOf(match.index)}: ${path}`);
      }
    }
    expect(stale).toEqual([]);
    expect(stray).toEqual([]);
  });

  it("names the docs where the package puts them in the code's messages (package-time errors, help texts)", () => {
    expect(DOCS).toBe('node_modules/kafka-lanes/docs');
    const bare: string[] = [];
    const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
    for (const file of walk(join(ROOT, 'src')).filter((path) => !path.includes(`${join('completion', 'scripts')}`))) {
      readFileSync(file, 'utf8').split('\n').forEach((text, i) => {
        if (/^\s*(\*|\/\/|\/\*)/.test(text)) return;
        for (const [, name] of text.matchAll(/(?<!\$\{DOCS\}\/|' \+ DOCS \+ '\/|node_modules\/kafka-lanes\/)docs\/([\w-]+\.md)/g)) bare.push(`${relative(ROOT, file)}:${i + 1}: docs/${name}`);
        for (const [, name] of text.matchAll(/(?:\$\{DOCS\}\/|' \+ DOCS \+ '\/)([\w-]+\.md)/g)) {
          if (!existsSync(join(ROOT, 'docs', name!))) bare.push(`${relative(ROOT, file)}:${i + 1}: ${name} is not in docs/`);
        }
      });
    }
    expect(bare).toEqual([]);
  });
});
