/**
 * bench:coldstart — how long loading the handler module takes at a Lambda cold start. The handler of
 * test/fixtures/bundled-handler is bundled with esbuild the ways it reaches Lambda and loaded by RUNS fresh Node
 * processes per row, the rows taking turns (`import()` of an ES module, `require` of a CommonJS file, as the runtime does); the median load time
 * (wall and the process's CPU time) is printed beside a bare handler's (the floor), with what the load reads (the
 * handler's file and the chunks it imports statically) and the bundle's whole size:
 *
 * - the serverless plugin's bundle (`lambdaBuildOptions`: ES modules with splitting, minified): what the
 *   framework needs only later (kafkajs, ioredis, Powertools, the AWS SDK) is in chunks read at first use;
 * - a user's own plain esbuild bundle, one CommonJS file, minified (as serverless-esbuild makes it): the same parts
 *   are inside, not evaluated at load but read and parsed; and the same with the AWS SDK left to the runtime.
 *
 * Each kafka-lanes row is measured twice: built from this repository's source, and as a user has it, from the
 * installed package (the bench packs it with `npm pack`, installs the tarball into a scratch service under the
 * system's temporary folder with `npm install --prefer-offline`, and bundles the same handler there, importing
 * `kafka-lanes`): the package ships ES modules, so its lazy parts stay lazy in the user's bundle.
 *
 * The "1st call" column is the first invocation's wall time for an event of no records, in the same processes:
 * where the parts loaded at first use (ioredis, Powertools) are paid, and the Redis client is made. It needs the
 * local Redis (`npm run local:up`).
 *
 *   npm run bench:coldstart
 *   RUNS=31 npm run bench:coldstart
 *   npm run bench:coldstart -- --cpu-prof   # also: where each kafka-lanes load's CPU time goes, per package (PROFILE_RUNS loads)
 *   COLDSTART_ROWS=readme npm run bench:coldstart   # only the floor and the README's handler (its own imports: zod...)
 *
 * The README's handler (`src/orders.ts` of README.md, "A handler") is measured from the installed package too, with
 * the packages its install block adds (`zod`), in the serverless plugin's bundle: what a user who follows the README
 * deploys; and the same handler importing classic zod (`import { z } from 'zod'`) instead of `zod/mini`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { lambdaBuildOptions } from '../src/serverless/bundle';
import { projectFiles, readSnippets } from '../test/support/doc-snippets';

const RUNS = Number(process.env.RUNS ?? 15);
const PROFILE_RUNS = Number(process.env.PROFILE_RUNS ?? 5);
const LOADER = join(__dirname, 'coldstart', 'load.mjs');
const BARE_HANDLER = join(__dirname, 'coldstart', 'bare-handler.ts');
const LANES_HANDLER = join(__dirname, '..', 'test', 'fixtures', 'bundled-handler', 'handler.ts');

/** A user's own bundle: one CommonJS file, minified, as serverless-esbuild makes it. */
const USER_CJS: BuildOptions = { bundle: true, platform: 'node', target: 'node22', format: 'cjs', minify: true };
/** The serverless plugin's bundle, as the plugin makes it (minified but for identifiers), without source maps. */
const PLUGIN_ESM: BuildOptions = { ...lambdaBuildOptions(), sourcemap: false };

interface Row {
  readonly name: string;
  readonly entry: string;
  readonly options: BuildOptions;
  /** Whether to call the handler once after the load (kafka-lanes handlers). */
  readonly firstCall: boolean;
}

/** The rows of one way of getting kafka-lanes (the repository's source, the installed package). */
function lanesRows(label: string, entry: string): Row[] {
  return [
    { name: `${label}, serverless plugin (ESM split)`, entry, options: PLUGIN_ESM, firstCall: true },
    { name: `${label}, user CommonJS`, entry, options: USER_CJS, firstCall: true },
    {
      name: `${label}, user CommonJS, SDK external`,
      entry,
      options: { ...USER_CJS, external: ['@aws-sdk/*', '@smithy/*'] },
      firstCall: true,
    },
  ];
}

const ROOT = join(__dirname, '..');

/**
 * Packs this repository (`npm pack`, which builds it) and installs the tarball into a scratch service in `dir`;
 * returns the fixture handler written there, importing `kafka-lanes`.
 */
function installedHandler(dir: string): string {
  const service = join(dir, 'service');
  mkdirSync(service, { recursive: true });
  const npm = (args: readonly string[], cwd: string): string =>
    execFileSync('npm', [...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  npm(['run', 'build'], ROOT);
  const packed = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], ROOT)) as Array<{ filename: string; size: number; entryCount: number }>;
  const { filename, size, entryCount } = packed[0]!;
  console.log(`npm pack: ${filename}, ${(size / 1024).toFixed(0)} KiB, ${entryCount} files; installing it into a scratch service`);
  writeFileSync(join(service, 'package.json'), JSON.stringify({ name: 'coldstart-service', version: '1.0.0', private: true }));
  // `zod`: what the README's install block adds beside kafka-lanes, for the README's handler.
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, filename), 'zod'], service);
  const handler = join(service, 'handler.ts');
  writeFileSync(handler, readFileSync(LANES_HANDLER, 'utf8').replace(/from '(\.\.\/)+src'/, "from 'kafka-lanes'"));
  const readme = projectFiles(readSnippets(readFileSync(join(ROOT, 'README.md'), 'utf8'), 'README.md').snippets, []).get('src/orders.ts');
  if (readme === undefined) throw new Error('README.md: no `// src/orders.ts` block (the handler of "A handler")');
  writeFileSync(join(service, 'orders.ts'), readme.text);
  // The same handler with classic zod, what `import { z } from 'zod'` costs at a cold start.
  const classic = readme.text.replace("import * as z from 'zod/mini';", "import { z } from 'zod';");
  if (classic === readme.text) throw new Error("README.md: the handler no longer imports `* as z from 'zod/mini'`: update bench:coldstart's classic-zod row");
  writeFileSync(join(service, 'orders-classic-zod.ts'), classic);
  return handler;
}

/** Bundles `entry` into `dir`; returns the file the runtime loads and the metafile. */
async function bundle(entry: string, dir: string, options: BuildOptions): Promise<{ file: string; metafile: Metafile }> {
  mkdirSync(dir, { recursive: true });
  const result = await build({ ...options, entryPoints: { handler: entry }, outdir: dir, metafile: true, logLevel: 'silent' });
  const file = Object.keys(result.metafile.outputs).find((output) => /(^|\/)handler\.m?js$/.test(output));
  if (file === undefined) throw new Error(`esbuild gave no handler file for ${entry}`);
  return { file: join(process.cwd(), file), metafile: result.metafile };
}

/** The handler's file and the chunks it imports statically, transitively: what loading it reads. */
function readAtLoad(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  if (!file.endsWith('.mjs')) return [file];
  const imports = [...readFileSync(file, 'utf8').matchAll(/(?:^|[;\s}])import\s*(?:[\w{}\s,*$]+from\s*)?["'](\.{1,2}\/[^"']+)["']/g)];
  return [file, ...imports.flatMap((match) => readAtLoad(join(dirname(file), match[1]!), seen))];
}

const kib = (files: readonly string[]): number => files.reduce((sum, file) => sum + statSync(file).size, 0) / 1024;

/** What a deployed function's environment gives the handler at cold start (nothing is connected at load). */
const FUNCTION_ENV = {
  PATH: process.env.PATH,
  KAFKA_LANES_GROUP: 'coldstart',
  KAFKA_LANES_REDIS_URL: process.env.KAFKA_LANES_REDIS_URL ?? 'redis://127.0.0.1:6379',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_DISABLED: 'true',
};

function loadOnce(file: string, firstCall: boolean, nodeArgs: readonly string[] = []): { wall: number; cpu: number; firstCall: number } {
  const args = [...nodeArgs, LOADER, file, ...(firstCall ? ['--first-call'] : [])];
  const out = execFileSync(process.execPath, args, { encoding: 'utf8', env: FUNCTION_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  const [wall, cpu, call] = out.trim().split(' ').map(Number);
  return { wall: wall!, cpu: cpu!, firstCall: call ?? Number.NaN };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The package (or source folder) a path of the bundle belongs to. */
const partOf = (input: string): string => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input.split('/').slice(0, 2).join('/');

/** The packages (or source folders) that weigh most in the given outputs, in output bytes. */
function heaviest(metafile: Metafile, outputs: ReadonlySet<string>, count: number): Array<[string, number]> {
  const byPackage = new Map<string, number>();
  for (const [name, output] of Object.entries(metafile.outputs)) {
    if (!outputs.has(join(process.cwd(), name))) continue;
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
 * the bundle, loading built-ins, garbage collection). The bundle keeps esbuild's `// node_modules/...` comments
 * (minified but for whitespace). A frame's line is its function's first line: the top-level code of an ES module
 * (all the modules it holds) is one function, so it counts as "top level"; functions it calls count as theirs.
 */
function profileParts(file: string, dir: string): Map<string, number> {
  const files = readAtLoad(file);
  const starts = new Map<string, Array<[number, string]>>();
  for (const read of files) {
    const list: Array<[number, string]> = [];
    readFileSync(read, 'utf8').split('\n').forEach((line, index) => {
      const match = /^\/\/ ((?:\.\.\/)*[\w@.-]+\/\S+\.(?:[cm]?js|ts|json))$/.exec(line);
      if (match !== null) list.push([index, partOf(match[1]!.replace(/^(\.\.\/)+/, ''))]);
    });
    starts.set(basename(read), list);
  }
  const partAt = (url: string, line: number): string | undefined => {
    const list = starts.get(basename(url.replace(/^file:\/\//, '')));
    if (list === undefined) return undefined;
    let found = 'top level (module bodies, esbuild helpers)';
    for (const [start, part] of list) if (start <= line) found = part; else break;
    return found;
  };
  for (let run = 0; run < PROFILE_RUNS; run += 1) loadOnce(file, false, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=100']);
  const parts = new Map<string, number>();
  for (const name of readdirSync(dir)) {
    const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    // Only the samples of the load (from the first to the last sample with the loader on its stack): not the
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
        const frame = byId.get(at)!.callFrame;
        if (!frame.url.endsWith('load.mjs')) part = partAt(frame.url, frame.lineNumber);
      }
      const leaf = byId.get(id)!.callFrame;
      part ??=
        leaf.functionName === '(garbage collector)'
          ? 'garbage collection'
          : leaf.url.startsWith('node:') && leaf.functionName !== 'compileSourceTextModule' && leaf.functionName !== 'wrapSafe'
            ? `node: ${leaf.url.slice(5)} (built-in module)`
            : 'node: read and compile the bundle';
      parts.set(part, (parts.get(part) ?? 0) + (profile.timeDeltas[index + 1] ?? 0) / 1000 / PROFILE_RUNS);
    });
  }
  return parts;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-lanes-coldstart-'));
  try {
    const readmeOnly = process.env.COLDSTART_ROWS === 'readme';
    const installed = process.env.COLDSTART_INSTALLED === '0' ? undefined : installedHandler(dir);
    const ROWS: readonly Row[] = [
      { name: 'bare handler, CommonJS', entry: BARE_HANDLER, options: USER_CJS, firstCall: false },
      { name: 'bare handler, ES module', entry: BARE_HANDLER, options: PLUGIN_ESM, firstCall: false },
      ...(readmeOnly ? [] : lanesRows('repository', LANES_HANDLER)),
      ...(installed === undefined || readmeOnly ? [] : lanesRows('installed', installed)),
      ...(installed === undefined
        ? []
        : [
            { name: "installed, README handler, zod/mini", entry: join(dirname(installed), 'orders.ts'), options: PLUGIN_ESM, firstCall: true },
            { name: 'installed, README handler, classic zod', entry: join(dirname(installed), 'orders-classic-zod.ts'), options: PLUGIN_ESM, firstCall: true },
          ]),
    ];
    const bundled: Array<Row & { file: string; metafile: Metafile }> = [];
    for (const [index, row] of ROWS.entries()) bundled.push({ ...row, ...(await bundle(row.entry, join(dir, String(index)), row.options)) });
    console.log(`bench:coldstart: median of ${RUNS} fresh processes, node ${process.version}`);
    console.log(
      `${'handler'.padEnd(44)} ${'load ms'.padStart(8)} ${'min'.padStart(6)} ${'CPU ms'.padStart(7)} ${'1st call ms'.padStart(12)} ` +
        `${'KiB read at load'.padStart(17)} ${'KiB bundle'.padStart(11)}`,
    );
    // Round-robin, one load of every row per round: on a shared machine the load changes over a run, and each row
    // then sees the same conditions.
    const loads = bundled.map(() => [] as Array<ReturnType<typeof loadOnce>>);
    for (let run = 0; run < RUNS; run += 1) bundled.forEach((row, index) => loads[index]!.push(loadOnce(row.file, row.firstCall)));
    bundled.forEach((row, index) => {
      const rowLoads = loads[index]!;
      const wall = rowLoads.map((load) => load.wall);
      const all = Object.keys(row.metafile.outputs).filter((output) => !output.endsWith('.map')).map((output) => join(process.cwd(), output));
      console.log(
        `${row.name.padEnd(44)} ${median(wall).toFixed(1).padStart(8)} ${Math.min(...wall).toFixed(1).padStart(6)} ` +
          `${median(rowLoads.map((load) => load.cpu)).toFixed(1).padStart(7)} ` +
          `${(row.firstCall ? median(rowLoads.map((load) => load.firstCall)).toFixed(1) : '').padStart(12)} ` +
          `${kib(readAtLoad(row.file)).toFixed(0).padStart(17)} ${kib(all).toFixed(0).padStart(11)}`,
      );
    });
    for (const row of bundled.filter((candidate) => candidate.firstCall && candidate.options.format === 'esm')) {
      console.log(`\nlargest parts read at load, ${row.name} (KiB of output):`);
      for (const [name, bytes] of heaviest(row.metafile, new Set(readAtLoad(row.file)), 8)) console.log(`  ${name.padEnd(40)} ${(bytes / 1024).toFixed(0).padStart(6)}`);
    }
    if (process.argv.includes('--cpu-prof')) {
      for (const [index, row] of ROWS.entries()) {
        if (!row.firstCall) continue;
        // Minified but for whitespace: the same code, with esbuild's comments naming each input.
        const { file } = await bundle(row.entry, join(dir, `profiled-${index}`), {
          ...row.options,
          minify: false,
          minifyWhitespace: false,
          minifySyntax: true,
          minifyIdentifiers: true,
        });
        const profiles = join(dir, `profiles-${index}`);
        mkdirSync(profiles);
        const parts = [...profileParts(file, profiles)].sort((a, b) => b[1] - a[1]);
        const total = parts.reduce((sum, [, ms]) => sum + ms, 0);
        console.log(`\nCPU of one load by part, ${row.name} (mean of ${PROFILE_RUNS} profiled loads, ${total.toFixed(0)} ms sampled):`);
        for (const [part, ms] of parts.slice(0, 12)) console.log(`  ${part.padEnd(48)} ${ms.toFixed(1).padStart(7)} ms ${((100 * ms) / total).toFixed(0).padStart(4)} %`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
