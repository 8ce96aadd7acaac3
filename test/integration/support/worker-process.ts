import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { buildSync } from 'esbuild';

const NODE_MODULES = resolve(__dirname, '..', '..', '..', 'node_modules');
const bundles = new Map<string, string>();

/**
 * The worker and the repository's sources it imports, bundled once per test file into one CommonJS file; packages
 * stay outside it and load from the repository's node_modules (`NODE_PATH`). Node then starts it in well under a
 * second, where tsx's loader spends seconds resolving and transforming the sources module by module at every start.
 */
function bundleOf(script: string): string {
  let outfile = bundles.get(script);
  if (outfile === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'kl-worker-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    outfile = join(dir, `${basename(script, '.ts')}.cjs`);
    // keepNames: error classes name themselves with `new.target.name`, which bundling must not rename.
    buildSync({ entryPoints: [script], outfile, bundle: true, packages: 'external', platform: 'node', format: 'cjs', target: 'node22', keepNames: true, logLevel: 'error' });
    bundles.set(script, outfile);
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
