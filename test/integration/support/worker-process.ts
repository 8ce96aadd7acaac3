import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { buildSync } from 'esbuild';

const NODE_MODULES = resolve(__dirname, '..', '..', '..', 'node_modules');
const built = new Set<string>();

/**
 * The worker and the repository's sources it imports, bundled once per test file into one CommonJS file; packages
 * stay outside it and load from the repository's node_modules (`NODE_PATH`). Node then starts it in well under a
 * second, where tsx's loader spends seconds resolving and transforming the sources module by module at every start.
 * One file per worker script, replaced whole (a rename), so runs never leave one behind or read
 * half of one.
 */
function bundleOf(script: string): string {
  // The worker keeps its name (stage-worker.ts checks it), in a folder named by its path's hash.
  const dir = join(tmpdir(), 'kl-workers', createHash('sha256').update(script).digest('hex').slice(0, 12));
  const outfile = join(dir, `${basename(script, '.ts')}.cjs`);
  if (!built.has(outfile)) {
    // keepNames: error classes name themselves with `new.target.name`, which bundling must not rename.
    const { outputFiles } = buildSync({
      entryPoints: [script], outfile, write: false, bundle: true, packages: 'external', platform: 'node', format: 'cjs', target: 'node22', keepNames: true, logLevel: 'error',
    });
    mkdirSync(dir, { recursive: true });
    const partial = `${outfile}.${process.pid}`;
    writeFileSync(partial, outputFiles[0]!.contents);
    renameSync(partial, outfile);
    built.add(outfile);
  }
  return outfile;
}

/**
 * Starts a TypeScript worker as ONE Node process (its bundle, run by node itself, not through a CLI that runs the
 * script in a child of its own): a SIGKILL sent to the returned process then kills the worker itself, at
 * once, as a crash would, and leaves no orphan still writing to Redis or Kafka while the test goes on.
 *
 * @example
 * const child = spawnWorker(join(__dirname, 'support', 'crash-worker.ts'), [eventFile]);
 * child.kill('SIGKILL');
 */
export function spawnWorker(script: string, args: readonly string[]): ChildProcess {
  const env = { ...process.env, NODE_PATH: NODE_MODULES };
  return spawn(process.execPath, [bundleOf(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
}
