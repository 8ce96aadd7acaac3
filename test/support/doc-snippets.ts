/**
 * The code blocks of README.md and docs/*.md, read the way the snippet tests check them. Pure: text in, blocks out.
 *
 * The conventions a document follows (the tests refuse anything else, naming the file and line):
 * - Every fenced block names its language: `ts`, `yaml`, `json`, `jsonc` (code a user writes, all checked),
 *   `sh` (commands) or `text` (output, pictures: deliberately not code).
 * - A block whose first line is a comment naming a path (`// src/orders.ts`, `# serverless.yml`,
 *   `// tsconfig.json`) is that whole file. The whole files of a document form one project, on top of the
 *   README's (a document's own file of the same path replaces the README's): its TypeScript files are
 *   type-checked together, its `serverless.yml` is packaged with them (`serverless package --stage prod`), its
 *   `tsconfig.json` (the README's for every document without one) gives the compiler options of every check.
 * - Any other `ts` block is a fragment, type-checked as a module of its own in that project (so it imports what it
 *   uses). What it assumes of the reader's code (a client, a helper) is declared in a prelude, an HTML comment
 *   right above the fence that the rendered page does not show:
 *       <!-- snippet: prelude
 *       declare const psp: { charge(amount: number): Promise<{ id: string }> };
 *       -->
 * - Any other `yaml` block is a fragment: it parses (with the CloudFormation tags). With
 *   `<!-- snippet: merge serverless.yml -->` right above the fence it is merged into the project's
 *   `serverless.yml` (objects key by key, anything else replaced) and packaged.
 * - `json` blocks parse; `jsonc` blocks parse once their comments are taken out.
 */

export const LANGUAGES = ['ts', 'yaml', 'json', 'jsonc', 'sh', 'text'] as const;
export type Language = (typeof LANGUAGES)[number];

export interface Snippet {
  /** The document, relative to the repository: `README.md`, `docs/options.md`. */
  readonly doc: string;
  /** The line of the opening fence, 1-based. */
  readonly line: number;
  readonly lang: Language;
  /** The path a whole file names on its first line, or `undefined` for a fragment. */
  readonly path: string | undefined;
  /** The block's text, its indentation (a block in a list item) taken out, ending with a newline. */
  readonly text: string;
  /** A `ts` fragment's prelude: declarations of what it assumes. */
  readonly prelude: string | undefined;
  /** A `yaml` fragment's merge target (`serverless.yml`). */
  readonly merge: string | undefined;
}

export interface ReadSnippets {
  readonly snippets: Snippet[];
  /** What breaks the conventions, each naming `doc:line`. */
  readonly problems: string[];
}

const FENCE = /^(\s*)(`{3,}|~{3,})(.*)$/;
const PATH_COMMENT: Record<Language, RegExp | undefined> = {
  ts: /^\/\/ ([\w./-]+\.(?:ts|mts|cts))\s*$/,
  yaml: /^# ([\w./-]+\.ya?ml)\s*$/,
  json: undefined, // JSON has no comments: a json block is always an excerpt
  jsonc: /^\/\/ ([\w./-]+\.json)\s*$/,
  sh: undefined,
  text: undefined,
};
const DIRECTIVE = /<!--\s*snippet:\s*(prelude|merge)\b([\s\S]*?)-->\s*$/;

/** The fenced blocks of `markdown` (the document `doc`) and what in them breaks the conventions above. */
export function readSnippets(markdown: string, doc: string): ReadSnippets {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    const [, indent = '', fence = '', info = ''] = open;
    const at = `${doc}:${i + 1}`;
    const close = lines.findIndex((text, j) => j > i && text.trim() === fence);
    if (close === -1) {
      problems.push(`${at}: the block is never closed (expected a line ${fence})`);
      break;
    }
    const body = lines.slice(i + 1, close).map((text) => (text.startsWith(indent) ? text.slice(indent.length) : text.trimStart()));
    const lang = info.trim().split(/\s+/)[0] ?? '';
    const directive = directiveAbove(lines, i);
    const line = i + 1;
    i = close;
    if (!(LANGUAGES as readonly string[]).includes(lang)) {
      problems.push(`${at}: a code block names its language, one of ${LANGUAGES.join(', ')} (\`text\` for what is not code); found "${lang}"`);
      continue;
    }
    const language = lang as Language;
    const path = PATH_COMMENT[language]?.exec(body[0] ?? '')?.[1];
    const snippet: Snippet = {
      doc, line, lang: language, path, text: `${body.join('\n')}\n`,
      prelude: directive?.kind === 'prelude' ? directive.text : undefined,
      merge: directive?.kind === 'merge' ? directive.text.trim() : undefined,
    };
    if (directive !== undefined) {
      const wanted = directive.kind === 'prelude' ? 'ts' : 'yaml';
      if (language !== wanted || path !== undefined) problems.push(`${at}: a \`snippet: ${directive.kind}\` comment belongs above a ${wanted} fragment, not a ${path === undefined ? language : `whole file (${path})`}`);
      if (directive.kind === 'merge' && snippet.merge !== 'serverless.yml') problems.push(`${at}: \`snippet: merge\` names the file it merges into, serverless.yml; found "${snippet.merge ?? ''}"`);
    }
    snippets.push(snippet);
  }
  return { snippets, problems };
}

/** The `<!-- snippet: ... -->` comment that ends on the line right above line `fence`, if any. */
function directiveAbove(lines: readonly string[], fence: number): { kind: 'prelude' | 'merge'; text: string } | undefined {
  if (!/-->\s*$/.test(lines[fence - 1] ?? '')) return undefined;
  let start = fence - 1;
  while (start >= 0 && !lines[start]!.includes('<!--')) start--;
  const match = DIRECTIVE.exec(lines.slice(Math.max(start, 0), fence).join('\n'));
  return match === null ? undefined : { kind: match[1] as 'prelude' | 'merge', text: match[2]!.replace(/^[^\S\n]*\n/, '') };
}

/** A document's project: its whole files by path, on top of the README's. */
export function projectFiles(readme: readonly Snippet[], own: readonly Snippet[]): Map<string, Snippet> {
  const files = new Map<string, Snippet>();
  for (const snippet of [...readme, ...own]) if (snippet.path !== undefined) files.set(snippet.path, snippet);
  return files;
}

/**
 * The module a `ts` fragment is checked as: its prelude, then its text. Named after where it stands, so a
 * compiler message points back to it: `snippets/docs-exactly-once.md-72.ts`.
 */
export function fragmentModule(snippet: Snippet): { name: string; text: string } {
  const name = `snippets/${snippet.doc.replace(/[/\\]/g, '-')}-${snippet.line}.ts`;
  // `export {}` keeps a fragment without imports a module of its own, so two fragments' names never clash.
  return { name, text: `${snippet.prelude ?? ''}${snippet.text}export {};\n` };
}

/** JSON with `//` and `/* *\/` comments taken out (outside strings), as tsconfig.json allows. */
export function stripJsonComments(text: string): string {
  return text.replace(/("(?:[^"\\]|\\.)*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (match, string: string | undefined) => string ?? '');
}

/** `base` with `patch` merged in: objects key by key, anything else (lists included) replaced. */
export function mergeDeep(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return patch;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) merged[key] = key in base ? mergeDeep(base[key], value) : value;
  return merged;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The package's public entries mapped to their sources in the checkout: `kafka-lanes` → `src/index.ts` and so on,
 * from package.json's `exports`. Each entry's declarations name its source by their path below the build's folders:
 * `./dist/types/operator.d.ts`, `./dist/src/operator.d.ts` → the first of `src/types/operator.ts`, `src/operator.ts`,
 * `src/operator/index.ts` ... that `exists`. Entries without declarations (the serverless plugin, package.json) are left
 * out; an entry whose source is not found is an error naming it.
 */
export function entrySources(name: string, exports: Record<string, unknown>, exists: (path: string) => boolean): Map<string, string> {
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(exports)) {
    const types = typesOf(target);
    if (types === undefined) continue;
    const segments = types.replace(/^\.\//, '').replace(/\.d\.[cm]?ts$/, '').split('/');
    const candidates = segments.flatMap((_, i) => {
      const rest = segments.slice(i).join('/');
      return [`src/${rest}.ts`, `src/${rest}/index.ts`];
    });
    const source = candidates.find(exists);
    const entry = subpath === '.' ? name : `${name}/${subpath.replace(/^\.\//, '')}`;
    if (source === undefined) throw new Error(`package.json exports: no source for ${entry} (its types ${types}); looked for ${candidates.join(', ')}`);
    entries.set(entry, source);
  }
  return entries;
}

function typesOf(target: unknown): string | undefined {
  if (!isObject(target)) return undefined;
  if (typeof target['types'] === 'string') return target['types'];
  for (const condition of ['import', 'require', 'default']) {
    const found = typesOf(target[condition]);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A command of a `sh` block: where it stands and its words (quotes taken out, the comment after ` #` dropped). */
export interface ShellCommand {
  readonly doc: string;
  /** The line of the command in the document, 1-based. */
  readonly line: number;
  readonly words: string[];
}

/** The commands of a `sh` block, one per line (a line ending with `\` goes on on the next). Pure. */
export function shellCommands(snippet: Snippet): ShellCommand[] {
  const commands: ShellCommand[] = [];
  const lines = snippet.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = i;
    let text = lines[i]!;
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!}`;
    const words = shellWords(text);
    if (words.length > 0) commands.push({ doc: snippet.doc, line: snippet.line + 1 + first, words });
  }
  return commands;
}

/** `text` split into words as a shell does for plain commands: quotes group, `#` after a space starts a comment. */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  for (const match of text.matchAll(/(?:^|\s)#.*$|'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)) {
    if (match[0].trimStart().startsWith('#')) break;
    const word = match[1] ?? match[2] ?? match[3];
    if (word !== undefined) words.push(word);
  }
  return words;
}

/** A CLI as far as a document can name it: its commands and their long options. */
export interface CommandTree {
  readonly name: string;
  readonly options: readonly string[];
  readonly commands: readonly CommandTree[];
}

/**
 * What in a call of the CLI (`args`, after `kafka-lanes`) the CLI does not know: a command that is not one, or an
 * option (`--flag`, `--flag=value`) that neither the command nor a parent takes. Empty when it knows everything. Pure.
 *
 * @example
 * unknownInCall(tree, ['topics', 'ensure', '--group', 'g', '--tier', '5s']); // ['kafka-lanes topics ensure: no option --tier']
 */
export function unknownInCall(tree: CommandTree, args: readonly string[]): string[] {
  const path: CommandTree[] = [tree];
  let at = 0;
  for (; at < args.length; at++) {
    const next = path[path.length - 1]!.commands.find((command) => command.name === args[at]);
    if (next === undefined) break;
    path.push(next);
  }
  const command = path[path.length - 1]!;
  const name = path.map((part) => part.name).join(' ');
  const rest = args.slice(at);
  const problems: string[] = [];
  if (command.commands.length > 0 && !rest.some((arg) => arg === '--help' || arg === '--version')) {
    problems.push(`${name}: expected one of its commands (${command.commands.map((c) => c.name).join(', ')}), got ${rest[0] === undefined ? 'none' : `"${rest[0]}"`}`);
  }
  const known = new Set(['--help', '--version', ...path.flatMap((part) => part.options)]);
  for (const arg of rest) {
    const option = /^--[\w-]+/.exec(arg)?.[0];
    if (option !== undefined && !known.has(option)) problems.push(`${name}: no option ${option}`);
  }
  return problems;
}

/**
 * The commands a document shows outside its `sh` blocks: inline code spans that start with `npx kafka-lanes ` or
 * `npm ` (`npm run local:up`), each with its line. Fenced blocks are left to `shellCommands`. Pure.
 */
export function inlineCommands(markdown: string, doc: string): ShellCommand[] {
  const commands: ShellCommand[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const open = FENCE.exec(text);
    if (open !== null) {
      if (fence === undefined) fence = open[2];
      else if (text.trim() === fence) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    for (const match of text.matchAll(/`([^`]+)`/g)) {
      const span = match[1]!;
      if (/^(npx kafka-lanes|npm) /.test(span)) commands.push({ doc, line: i + 1, words: shellWords(span) });
    }
  });
  return commands;
}

/** npm's own commands a document may show (everything else after `npm` is a package script). */
const NPM_COMMANDS = new Set(['ci', 'install', 'i', 'pack', 'pkg', 'publish', 'init', 'exec', 'view', 'ls', 'cache', 'config', 'uninstall', 'update', 'audit']);

/**
 * What in a command a document shows does not exist: a package script `npm run <name>` (or `npm start`, `npm test`)
 * that `scripts` lacks, or for `npx kafka-lanes <args>` and `npm run cli -- <args>` what `unknownInCall` finds.
 * Any other command is not judged. Pure.
 *
 * @example
 * unknownInCommand(tree, { start: '...' }, ['npm', 'run', 'local:up']); // ['npm run local:up: no such script in package.json']
 */
export function unknownInCommand(tree: CommandTree, scripts: Readonly<Record<string, string>>, words: readonly string[]): string[] {
  const [tool, first, second] = words;
  // The tool named without arguments (`npx kafka-lanes`, `npm run cli --`, `npm run`) is a name in prose, not a call.
  const call = (args: readonly string[]) => (args.length === 0 ? [] : unknownInCall(tree, args));
  if (tool === 'npx' && first === tree.name) return call(words.slice(2));
  if (tool !== 'npm' || first === undefined || NPM_COMMANDS.has(first) || (first === 'run' && second === undefined)) return [];
  const script = first === 'run' || first === 'run-script' ? second : first === 'start' || first === 'test' ? first : undefined;
  if (script === undefined) return [`${words.join(' ')}: not an npm command this check knows (${[...NPM_COMMANDS].join(', ')}, run, start, test)`];
  if (!(script in scripts)) return [`npm run ${script}: no such script in package.json`];
  if (script === 'cli') {
    const dashes = words.indexOf('--');
    return call(dashes === -1 ? [] : words.slice(dashes + 1));
  }
  return [];
}
