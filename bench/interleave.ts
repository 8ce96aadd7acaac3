/**
 * bench:interleave — one benchmark of this checkout beside the same benchmark of another checkout (the previous main,
 * say), each run a process of its own, alternately: base, new, base, new, ... (PAIRS pairs). Prints every figure the
 * benchmark writes to its FIGURES_JSON, each pair's and the medians of each side, and new ÷ base of the medians. The
 * machine is shared and noisy: a change is judged by ratios within one such run, never against another day's figures.
 *
 * Both sides run this checkout's harness: bench/ is copied into `<BASE>/.bench-interleave/` first, so each runs the
 * same benchmark code on its own `src/` (a benchmark that needs an API the base lacks cannot be compared this way).
 * Every other variable of the environment (RECORDS, CONCURRENCY, ROUNDS, ...) goes to both as it is.
 *
 *   git -C /work/main worktree add /work/base <commit> && (cd /work/base && npm ci)
 *   BASE=/work/base CONCURRENCY=1000 RECORDS=100000 NOOP_RECORDS=100000 BASELINE_RECORDS=0 ROUNDS=1 npm run bench:interleave
 *   BASE=/work/base BENCH=steps CONTENDERS='no steps, unordered;1 hand-off, unordered' LATENCY_MS=0 npm run bench:interleave
 *
 * BENCH: `processor` (default), `steps` or `engine`; PAIRS: 3; SHOW: a regular expression of the figures to print (default: the
 * records/s, CPU per record and ratio figures).
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { median } from './support';

const ROOT = join(__dirname, '..');
const BASE = process.env.BASE;
const BENCH = process.env.BENCH ?? 'processor';
const PAIRS = Number(process.env.PAIRS ?? 3);
const SHOW = new RegExp(process.env.SHOW ?? 'recordsPerSecond|cpuPerRecord|Ratio|ratio|extraCpu|handedOffExtraCpu');

/** A benchmark's figures, flattened: `columns.c1000 10ms.median.cpuPerRecord` → 9.8. Arrays (per-round figures) are left out. */
function flatten(value: unknown, path: string, into: Map<string, number>): Map<string, number> {
  if (typeof value === 'number' && Number.isFinite(value)) into.set(path, value);
  else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, path === '' ? key : `${path}.${key}`, into);
  }
  return into;
}

/** Runs the benchmark once in `checkout` (its own node_modules first on PATH, as `npm run` does); its figures. */
async function runOnce(side: string, checkout: string, file: string): Promise<Map<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-interleave-'));
  const figures = join(dir, 'figures.json');
  const env = { ...process.env, FIGURES_JSON: figures, PATH: `${join(checkout, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}` };
  const started = Date.now();
  const code = await new Promise<number | null>((done) => {
    const child = spawn(join(checkout, 'node_modules', '.bin', 'tsx'), [file], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (/^\s+round \d+:/.test(line)) console.log(`    ${side}${line}`);
    });
    child.on('close', done);
  });
  if (code !== 0 || !existsSync(figures)) throw new Error(`${side}: ${file} in ${checkout} exited with ${code} and wrote no figures`);
  const parsed = flatten(JSON.parse(readFileSync(figures, 'utf8')), '', new Map());
  rmSync(dir, { recursive: true, force: true });
  console.log(`  ${side} done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return parsed;
}

const format = (n: number | undefined): string => (n === undefined || !Number.isFinite(n) ? '-' : Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en-US') : n.toFixed(Math.abs(n) >= 10 ? 1 : 2));

async function main(): Promise<void> {
  if (BASE === undefined || !existsSync(join(BASE, 'src'))) throw new Error(`BASE: expected the checkout to compare with (a worktree with src/ and node_modules/), got ${BASE ?? 'nothing'}`);
  const base = resolve(BASE);
  // The same harness on both sides: this checkout's bench/, next to the base's src/ and test/.
  const harness = join(base, '.bench-interleave');
  rmSync(harness, { recursive: true, force: true });
  cpSync(join(ROOT, 'bench'), harness, { recursive: true });
  console.log(`bench:interleave: ${BENCH}, ${PAIRS} pair(s), base ${base}, new ${ROOT}`);
  const sides = { base: [] as Array<Map<string, number>>, new: [] as Array<Map<string, number>> };
  for (let pair = 1; pair <= PAIRS; pair += 1) {
    console.log(`pair ${pair}:`);
    sides.base.push(await runOnce('base', base, join(harness, `${BENCH}.ts`)));
    sides.new.push(await runOnce('new ', ROOT, join(ROOT, 'bench', `${BENCH}.ts`)));
  }
  const names = [...new Set([...sides.base, ...sides.new].flatMap((figures) => [...figures.keys()]))].filter((name) => SHOW.test(name));
  const width = Math.max(...names.map((name) => name.length));
  console.log(`\n${'figure'.padEnd(width)}  ${'base (each pair)'.padEnd(30)}  ${'new (each pair)'.padEnd(30)}  ${'base'.padStart(9)}  ${'new'.padStart(9)}  new÷base`);
  for (const name of names) {
    const of = (runs: ReadonlyArray<Map<string, number>>): number[] => runs.map((figures) => figures.get(name)).filter((n): n is number => n !== undefined);
    const b = of(sides.base);
    const n = of(sides.new);
    const mb = b.length > 0 ? median(b) : undefined;
    const mn = n.length > 0 ? median(n) : undefined;
    const ratio = mb !== undefined && mn !== undefined && mb !== 0 ? (mn / mb).toFixed(2) : '-';
    console.log(`${name.padEnd(width)}  ${b.map(format).join(', ').padEnd(30)}  ${n.map(format).join(', ').padEnd(30)}  ${format(mb).padStart(9)}  ${format(mn).padStart(9)}  ${ratio}`);
  }
}

main().then(
  () => process.exit(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
