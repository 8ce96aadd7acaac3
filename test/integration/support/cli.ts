import { runCli } from '../../../src/cli/main';

/** What one CLI run printed, and its exit code. */
export interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/**
 * Runs `kafka-lanes <args>` in this process and captures what it writes.
 *
 * @example
 * const { code, out } = await runCliCaptured('status', 'orders-svc', '--json');
 */
export async function runCliCaptured(...args: string[]): Promise<CliRun> {
  let out = '';
  let err = '';
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((out += String(chunk)), true));
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));
  try {
    const code = await runCli(['node', 'kafka-lanes', ...args]);
    return { code, out, err };
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
}
