/**
 * bench:coldstart — how long loading the handler module takes at a Lambda cold start. A handler is bundled
 * with esbuild as serverless-esbuild bundles it (node22, cjs, minified) and loaded by RUNS fresh Node
 * processes; the median `require` time is printed beside a bare handler's (the floor) and the bundle's
 * size, with the largest inputs of the bundle (what a lighter cold start would cut first).
 *
 *   npm run bench:coldstart
 *   RUNS=31 npm run bench:coldstart
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';

const RUNS = Number(process.env.RUNS ?? 15);
const LOADER = join(__dirname, 'coldstart', 'load.mjs');
const HANDLERS = {
  'bare handler': join(__dirname, 'coldstart', 'bare-handler.ts'),
  'kafka-lanes handler': join(__dirname, '..', 'test', 'fixtures', 'bundled-handler', 'handler.ts'),
} as const;

async function bundle(entry: string, outfile: string): Promise<Metafile> {
  const result = await build({
    entryPoints: [entry], outfile, bundle: true, platform: 'node', target: 'node22', format: 'cjs', minify: true,
    metafile: true, logLevel: 'silent',
  });
  return result.metafile;
}

/** What a deployed function's environment gives the handler at cold start (nothing is connected at load). */
const FUNCTION_ENV = { PATH: process.env.PATH, KAFKA_LANES_GROUP: 'coldstart', KAFKA_LANES_REDIS_URL: 'redis://127.0.0.1:6379' };

function loadTimes(file: string): number[] {
  return Array.from({ length: RUNS }, () =>
    Number(execFileSync(process.execPath, [LOADER, file], { encoding: 'utf8', env: FUNCTION_ENV, stdio: ['ignore', 'pipe', 'pipe'] })),
  );
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** The packages (or source folders) that weigh most in the bundle, in output bytes. */
function heaviest(metafile: Metafile, count: number): Array<[string, number]> {
  const byPackage = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
      const name = match?.[1] ?? input.split('/').slice(0, 2).join('/');
      byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, count);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kafka-lanes-coldstart-'));
  try {
    console.log(`bench:coldstart: median of ${RUNS} fresh processes, node ${process.version}`);
    console.log(`${'handler'.padEnd(22)} ${'load ms (median)'.padStart(17)} ${'min'.padStart(8)} ${'bundle KiB'.padStart(11)}`);
    let lanesMetafile: Metafile | undefined;
    for (const [name, entry] of Object.entries(HANDLERS)) {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.js`);
      const metafile = await bundle(entry, file);
      if (name === 'kafka-lanes handler') lanesMetafile = metafile;
      const times = loadTimes(file);
      console.log(
        `${name.padEnd(22)} ${median(times).toFixed(1).padStart(17)} ${Math.min(...times).toFixed(1).padStart(8)} ${(statSync(file).size / 1024).toFixed(0).padStart(11)}`,
      );
    }
    if (lanesMetafile !== undefined) {
      console.log('\nlargest parts of the kafka-lanes bundle (KiB of output):');
      for (const [name, bytes] of heaviest(lanesMetafile, 8)) console.log(`  ${name.padEnd(40)} ${(bytes / 1024).toFixed(0).padStart(6)}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
