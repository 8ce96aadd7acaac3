import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starts a TypeScript worker as ONE Node process (tsx loaded with `--import`, not the tsx CLI, which runs the
 * script in a child of its own): a SIGKILL sent to the returned process then kills the worker itself, at
 * once, as a crash would, and leaves no orphan still writing to Redis or Kafka while the test goes on.
 *
 * @example
 * const child = spawnWorker(join(__dirname, 'support', 'crash-worker.ts'), [eventFile]);
 * child.kill('SIGKILL');
 */
export function spawnWorker(script: string, args: readonly string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
}
