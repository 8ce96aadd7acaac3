/** The processes and tools of the local stack: PATH look-ups, pid files, ports, stopping, running a tool. */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { sleep } from '../../deadline';
import { HOST, LocalStackError, type Log } from './config';

export function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}

/** Whether something accepts TCP connections on 127.0.0.1:<port>. */
export function portOpen(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    socket.setTimeout(timeoutMs);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

/** The full path of `command` on PATH, or undefined. */
export function onPath(command: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, command);
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** What to install for each tool the stack runs. */
const INSTALL_HINTS: Record<string, string> = {
  java: 'a Java 17 (or later) runtime: Debian/Ubuntu `apt-get install openjdk-17-jre-headless`, macOS `brew install openjdk@17`',
  mvn: 'Maven, which fetches the Kafka broker jars once: Debian/Ubuntu `apt-get install maven`, macOS `brew install maven`',
  'redis-server': 'Redis: Debian/Ubuntu `apt-get install redis-server`, macOS `brew install redis`',
  'redis-cli': 'the Redis tools (for the cluster): Debian/Ubuntu `apt-get install redis-tools`, macOS `brew install redis`',
};

export function requireTool(command: string, purpose: string): void {
  if (onPath(command) === undefined) {
    throw new LocalStackError(`${purpose} needs \`${command}\` on PATH, and it is not there. Install ${INSTALL_HINTS[command] ?? command}, then run this again.`);
  }
}

/** The command line of a live process, or undefined (it is gone, or not ours to read). */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // No /proc (macOS): ask ps.
    const ps = spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
    return ps.status === 0 && ps.stdout.trim() !== '' ? ps.stdout.trim() : undefined;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').replace(/[^0-9]/g, ''));
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** The pid in `file` when that process is alive and its command line contains `needle` (guards reused pids). */
export function ownPid(file: string, needle: string): number | undefined {
  const pid = readPid(file);
  return pid !== undefined && (commandLine(pid)?.includes(needle) ?? false) ? pid : undefined;
}

/** SIGTERM, then SIGKILL after `graceMs`; true once the process is gone. */
export async function stopPid(pid: number, name: string, graceMs: number, log: Log): Promise<boolean> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return true;
  }
  for (const deadline = Date.now() + graceMs; Date.now() < deadline; await sleep(100)) {
    if (!alive(pid)) return (log(`${name}: stopped (pid ${pid})`), true);
  }
  log(`${name}: pid ${pid} still running after ${graceMs / 1000}s; sending SIGKILL`);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  for (let i = 0; i < 50; i++, await sleep(100)) if (!alive(pid)) return (log(`${name}: killed (pid ${pid})`), true);
  log(`${name}: pid ${pid} did not exit`);
  return false;
}

export async function waitPortClosed(port: number): Promise<boolean> {
  for (let i = 0; i < 50; i++, await sleep(100)) if (!(await portOpen(port, 300))) return true;
  return false;
}

export function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

export function runTool(command: string, args: readonly string[], outFile: string, cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const out = openSync(outFile, 'w');
    const child = spawn(command, args, { stdio: ['ignore', out, out], ...(cwd === undefined ? {} : { cwd }) });
    child.once('error', (error) => (closeSync(out), reject(error)));
    child.once('exit', (code) => (closeSync(out), resolve(code ?? 1)));
  });
}
