import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

/** A free TCP port on 127.0.0.1 (serverless-offline's Lambda endpoint must not collide with another run). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface OfflineProcess {
  readonly child: ChildProcess;
  /** Sends SIGINT (Ctrl-C) and resolves with the exit code once the process has ended. */
  stop(): Promise<number | null>;
}

/**
 * Runs `serverless offline start` in `cwd` (a service using the kafka-lanes plugin) with its output in
 * `logFile`; resolves once the offline Kafka trigger has started its consumers.
 *
 * @example
 * const offline = await startServerlessOffline({ cwd: ROOT, env: { DEMO_TOPIC: 'orders' }, logFile: '.local/offline.log' });
 * await offline.stop();
 */
export function startServerlessOffline(options: { cwd: string; env: NodeJS.ProcessEnv; logFile: string; timeoutMs?: number }): Promise<OfflineProcess> {
  const log = createWriteStream(options.logFile);
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'serverless'), ['offline', 'start'], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    const code = await exited;
    await new Promise((resolve) => log.end(resolve));
    return code;
  };
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`serverless offline did not start its Kafka triggers within ${options.timeoutMs} ms; see ${options.logFile}`));
    }, options.timeoutMs ?? 300_000);
    const onData = (chunk: Buffer): void => {
      seen = (seen + chunk.toString()).slice(-4_000);
      if (/Kafka trigger\(s\) running/.test(seen)) {
        clearTimeout(timer);
        resolve({ child, stop });
      }
    };
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) => (clearTimeout(timer), reject(error)));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serverless offline exited with ${code} before its Kafka triggers ran; see ${options.logFile}:\n${seen}`));
    });
  });
}
