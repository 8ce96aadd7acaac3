import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import ts from 'typescript';

/** The repository's `src/` folder. */
export const SRC = join(__dirname, '..', '..', '..', 'src');

/** Every TypeScript file under `src/`, as paths relative to it (`engine/engine.ts`). */
export function sourceFiles(root = SRC): string[] {
  const found: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.[cm]?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) found.push(relative(root, path));
    }
  };
  walk(root);
  return found.sort();
}

/** Resolves a relative specifier the way Node's CommonJS resolution finds our own sources. */
function resolveSource(root: string, from: string, specifier: string): string | undefined {
  const base = join(root, dirname(from), specifier);
  const candidates = [base, `${base}.ts`, `${base}.cts`, `${base}.mts`, join(base, 'index.ts')];
  const hit = candidates.find((path) => existsSync(path) && statSync(path).isFile());
  return hit === undefined ? undefined : relative(root, hit);
}

/** One import of one source file by another, both relative to `src/`. */
export interface SourceImport {
  readonly from: string;
  readonly to: string;
}

/**
 * Every relative import between source files: static `import` / `export ... from` (type-only ones too: a
 * type is a dependency of the folder that names it), `import()` and `require()`.
 */
export function sourceImports(root = SRC): SourceImport[] {
  return sourceFiles(root).flatMap((from) => {
    const text = readFileSync(join(root, from), 'utf8');
    return ts
      .preProcessFile(text, true, true)
      .importedFiles.map((file) => file.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => {
        const to = resolveSource(root, from, specifier);
        if (to === undefined) throw new Error(`${from}: cannot resolve ${specifier}`);
        return { from, to };
      });
  });
}

/**
 * The unit a file belongs to for the folder check: its top folder under `src/` (`engine`), or, for a file
 * at the root of `src/`, the file itself (`deadline.ts`): root files are leaves every folder may use.
 */
export function unitOf(file: string): string {
  const [top, ...rest] = file.split(sep);
  return rest.length === 0 ? (top ?? file) : `${top}/`;
}

/** Pairs of units that import each other, each named with one import per direction as evidence. */
export function mutualImports(imports: readonly SourceImport[]): string[] {
  const edges = new Map<string, SourceImport>();
  for (const edge of imports) {
    const key = `${unitOf(edge.from)} -> ${unitOf(edge.to)}`;
    if (unitOf(edge.from) !== unitOf(edge.to) && !edges.has(key)) edges.set(key, edge);
  }
  const pairs: string[] = [];
  for (const [key, edge] of edges) {
    const [a, b] = key.split(' -> ') as [string, string];
    const back = edges.get(`${b} -> ${a}`);
    if (back !== undefined && a < b) pairs.push(`${a} <-> ${b} (${edge.from} imports ${edge.to}; ${back.from} imports ${back.to})`);
  }
  return pairs.sort();
}
