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

/**
 * Groups of units that reach each other through imports (the strongly connected components of the unit
 * graph, Tarjan's algorithm), each named with one import per edge of a cycle through the group as
 * evidence. A dependency graph that points one way has none, of any length.
 */
export function unitCycles(imports: readonly SourceImport[]): string[] {
  const edges = new Map<string, Map<string, SourceImport>>();
  for (const edge of imports) {
    const from = unitOf(edge.from);
    const to = unitOf(edge.to);
    if (from === to) continue;
    const out = edges.get(from) ?? new Map<string, SourceImport>();
    if (!out.has(to)) out.set(to, edge);
    edges.set(from, out);
  }
  const next = (unit: string): string[] => [...(edges.get(unit)?.keys() ?? [])].sort();
  const units = [...new Set([...edges.keys(), ...[...edges.values()].flatMap((out) => [...out.keys()])])].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (unit: string): void => {
    const own = index.size;
    index.set(unit, own);
    low.set(unit, own);
    stack.push(unit);
    onStack.add(unit);
    for (const to of next(unit)) {
      if (!index.has(to)) visit(to);
      if (onStack.has(to)) low.set(unit, Math.min(low.get(unit) ?? own, low.get(to) ?? own));
    }
    if (low.get(unit) !== own) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === unit) break;
    }
    if (component.length > 1) components.push(component.sort());
  };
  for (const unit of units) if (!index.has(unit)) visit(unit);
  return components.map((component) => {
    const members = new Set(component);
    const start = component[0] ?? '';
    // One cycle through the component: a breadth-first search from its first unit back to it.
    const cameFrom = new Map<string, string>();
    const queue = [start];
    let closing: string | undefined;
    while (queue.length > 0 && closing === undefined) {
      const unit = queue.shift() ?? start;
      for (const to of next(unit)) {
        if (!members.has(to)) continue;
        if (to === start) {
          closing = unit;
          break;
        }
        if (!cameFrom.has(to)) {
          cameFrom.set(to, unit);
          queue.push(to);
        }
      }
    }
    const path = [start];
    for (let unit = closing; unit !== undefined && unit !== start; unit = cameFrom.get(unit)) path.splice(1, 0, unit);
    const evidence = path.map((unit, i) => {
      const to = path[(i + 1) % path.length] ?? start;
      const edge = edges.get(unit)?.get(to);
      return `${edge?.from ?? unit} imports ${edge?.to ?? to}`;
    });
    return `${[...path, start].join(' -> ')} (${evidence.join('; ')})`;
  });
}

/** The types a Redis client goes by: ioredis' own, and our alias of them. */
export const CLIENT_TYPES: ReadonlySet<string> = new Set(['RedisClient', 'Redis', 'Cluster']);

/** Whether a type annotation names a Redis client (`RedisClient`, `Redis | Cluster`, `RedisClient[]`, `Array<Redis>`). */
export function namesClient(type: ts.TypeNode): boolean {
  if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) && CLIENT_TYPES.has(type.typeName.text)) return true;
  let found = false;
  ts.forEachChild(type, (child) => {
    if (!found && ts.isTypeNode(child) && namesClient(child)) found = true;
  });
  return found;
}
