/**
 * bench:coldstart — how long loading the handler module takes at a Lambda cold start. A handler is bundled
 * with esbuild as serverless-esbuild bundles it (node22, cjs, minified) and loaded by RUNS fresh Node
 * processes; the median `require` time (wall and the process's CPU time) is printed beside a bare handler's
 * (the floor) and the bundle's size, with the largest inputs of the bundle. A third row leaves the AWS SDK out
 * of the bundle (`@aws-sdk/*`, `@smithy/*` external, as when the runtime provides it): only MSK needs it, on
 * first use, but a bundle that carries it still pays for reading and compiling it at load.
 *
 *   npm run bench:coldstart
 *   RUNS=31 npm run bench:coldstart
 *   npm run bench:coldstart -- --cpu-prof   # also: where the load's CPU time goes, per package (PROFILE_RUNS loads)
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type BuildOptions, type Metafile } from 'esbuild';

const RUNS = Number(process.env.RUNS ?? 15);
const PROFILE_RUNS = Number(process.env.PROFILE_RUNS ?? 5);
const LOADER = join(__dirname, 'coldstart', 'load.mjs');
const LANES_HANDLER = join(__dirname, '..', 'test', 'fixtures', 'bundled-handler', 'handler.ts');
const HANDLERS: ReadonlyArray<{ name: string; entry: string; options?: BuildOptions }> = [
  { name: 'bare handler', entry: join(__dirname, 'coldstart', 'bare-handler.ts') },
  { name: 'kafka-lanes handler', entry: LANES_HANDLER },
  { name: 'kafka-lanes, SDK external', entry: LANES_HANDLER, options: { external: ['@aws-sdk/*', '@smithy/*'] } },
];

async function bundle(entry: string, outfile: string, options: BuildOptions = { minify: true }): Promise<Metafile> {
  const result = await build({
    entryPoints: [entry], outfile, bundle: true, platform: 'node', target: 'node22', format: 'cjs', metafile: true, logLevel: 'silent', ...options,
  });
  if (result.metafile === undefined) throw new Error(`esbuild gave no metafile for ${entry}`);
  return result.metafile;
}

/** What a deployed function's environment gives the handler at cold start (nothing is connected at load). */
const FUNCTION_ENV = { PATH: process.env.PATH, KAFKA_LANES_GROUP: 'coldstart', KAFKA_LANES_REDIS_URL: 'redis://127.0.0.1:6379' };

function loadOnce(file: string, nodeArgs: readonly string[] = []): { wall: number; cpu: number } {
  const out = execFileSync(process.execPath, [...nodeArgs, LOADER, file], { encoding: 'utf8', env: FUNCTION_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const [wall, cpu] = out.trim().split(' ').map(Number);
  return { wall: wall!, cpu: cpu! };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The package (or source folder) a path of the bundle belongs to. */
const partOf = (input: string): string => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input.split('/').slice(0, 2).join('/');

/** The packages (or source folders) that weigh most in the bundle, in output bytes. */
function heaviest(metafile: Metafile, count: number): Array<[string, number]> {
  const byPackage = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) byPackage.set(partOf(input), (byPackage.get(partOf(input)) ?? 0) + bytesInOutput);
  }
  return [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, count);
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

/**
 * CPU time of loads of `file` by part: each sample goes to the innermost frame of the bundle on its stack (so a
 * package's evaluation includes the built-ins it calls), else to what Node itself did (reading and compiling
 * the bundle, garbage collection). `file` keeps esbuild's `// node_modules/...` comments.
 */
function profileParts(file: string, dir: string): Map<string, number> {
  const starts: Array<[number, string]> = [];
  readFileSync(file, 'utf8').split('\n').forEach((line, index) => {
    const match = /^\/\/ ((?:\.\.\/)*[\w@.-]+\/\S+\.(?:[cm]?js|ts|json))$/.exec(line);
    if (match !== null) starts.push([index, partOf(match[1]!)]);
  });
  const partAt = (line: number): string => {
    let found = 'top level (ES modules, esbuild helpers)';
    for (const [start, part] of starts) if (start <= line) found = part; else break;
    return found;
  };
  for (let run = 0; run < PROFILE_RUNS; run += 1) loadOnce(file, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100']);
  const parts = new Map<string, number>();
  for (const name of readdirSync(dir)) {
    const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    // Only the samples of the `require` (from the first to the last sample with the loader on its stack): not the
    // process start, which the load times leave out too.
    const inLoad = profile.samples.map((id) => {
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)!.callFrame.url.endsWith('load.mjs')) return true;
      return false;
    });
    const first = inLoad.indexOf(true);
    const last = inLoad.lastIndexOf(true);
    profile.samples.forEach((id, index) => {
      if (index < first || index > last) return;
      let part: string | undefined;
      for (let at: number | undefined = id; at !== undefined && part === undefined; at = parent.get(at)) {
        if (byId.get(at)!.callFrame.url.endsWith(file)) part = partAt(byId.get(at)!.callFrame.lineNumber);
      }
      const leaf = byId.get(id)!.callFrame;
      part ??= leaf.functionName === '(garbage collector)' ? 'garbage collection' : 'node: read and compile the bundle';
      parts.set(part, (parts.get(part) ?? 0) + (profile.timeDeltas[index + 1] ?? 0) / 1000 / PROFILE_RUNS);
    });
  }
  return parts;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-lanes-coldstart-'));
  try {
    console.log(`bench:coldstart: median of ${RUNS} fresh processes, node ${process.version}`);
    console.log(`${'handler'.padEnd(26)} ${'load ms (median)'.padStart(17)} ${'min'.padStart(8)} ${'CPU ms (median)'.padStart(16)} ${'bundle KiB'.padStart(11)}`);
    let lanesMetafile: Metafile | undefined;
    for (const { name, entry, options } of HANDLERS) {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.js`);
      const metafile = await bundle(entry, file, { minify: true, ...options });
      if (name === 'kafka-lanes handler') lanesMetafile = metafile;
      const loads = Array.from({ length: RUNS }, () => loadOnce(file));
      const wall = loads.map((load) => load.wall);
      console.log(
        `${name.padEnd(26)} ${median(wall).toFixed(1).padStart(17)} ${Math.min(...wall).toFixed(1).padStart(8)} ` +
          `${median(loads.map((load) => load.cpu)).toFixed(1).padStart(16)} ${(statSync(file).size / 1024).toFixed(0).padStart(11)}`,
      );
    }
    if (lanesMetafile !== undefined) {
      console.log('\nlargest parts of the kafka-lanes bundle (KiB of output):');
      for (const [name, bytes] of heaviest(lanesMetafile, 8)) console.log(`  ${name.padEnd(40)} ${(bytes / 1024).toFixed(0).padStart(6)}`);
    }
    if (process.argv.includes('--cpu-prof')) {
      // Minified but for whitespace: the same code, with esbuild's comments naming each input.
      const file = join(dir, 'kafka-lanes-profiled.js');
      await bundle(LANES_HANDLER, file, { minifySyntax: true, minifyIdentifiers: true });
      const profiles = join(dir, 'profiles');
      mkdirSync(profiles);
      const parts = [...profileParts(file, profiles)].sort((a, b) => b[1] - a[1]);
      const total = parts.reduce((sum, [, ms]) => sum + ms, 0);
      console.log(`\nCPU of one load of the kafka-lanes bundle by part (mean of ${PROFILE_RUNS} profiled loads, ${total.toFixed(0)} ms sampled):`);
      for (const [part, ms] of parts.slice(0, 12)) console.log(`  ${part.padEnd(40)} ${ms.toFixed(1).padStart(7)} ms ${((100 * ms) / total).toFixed(0).padStart(4)} %`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
