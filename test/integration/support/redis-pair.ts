/**
 * A Redis primary and its replica of a test's own: two `redis-server` processes on ports in 6400-6499, no
 * persistence, stopped by the test. The shared Redis of the suite is never stopped or flushed; a test that must
 * kill a primary uses these.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { Redis } from 'ioredis';

export interface RedisServer {
  readonly port: number;
  readonly process: ChildProcess;
}

function startServer(port: number, extra: readonly string[] = []): RedisServer {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', tmpdir(), ...extra], { stdio: 'ignore' });
  return { port, process: child };
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    if (await condition().catch(() => false)) return;
    if (Date.now() > giveUpAt) throw new Error(`redis pair: ${what} not reached in time`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A port in 6400-6499 at random (the range is ours by convention only: `startRedis` checks who answers). */
function pickPort(): number {
  return 6400 + Math.floor(Math.random() * 100);
}

/**
 * One server of its own (e.g. with an evicting policy), answering on its port. The port is picked at random; a
 * port some other server holds already (another test's, another helper's) is told by the answering process id,
 * and another port is tried.
 */
export async function startRedis(extra: readonly string[] = []): Promise<RedisServer> {
  for (let attempt = 0; attempt < 10; attempt += 1) {
    const port = pickPort();
    const server = startServer(port, extra);
    const exited = new Promise<'exited'>((resolve) => server.process.once('exit', () => resolve('exited')));
    const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
    // Refused connections while the server starts are expected: the probe retries.
    probe.on('error', () => undefined);
    try {
      const ours = await Promise.race([
        exited,
        until(async () => (await probe.ping()) === 'PONG', `redis-server on ${port}`).then(async () => /process_id:(\d+)/.exec(await probe.info('server'))?.[1]),
      ]);
      if (ours === String(server.process.pid)) return server;
    } finally {
      probe.disconnect();
    }
    server.process.kill('SIGKILL');
  }
  throw new Error('redis pair: no free port in 6400-6499 after 10 tries');
}

export class RedisPair {
  readonly primary: RedisServer;
  readonly replica: RedisServer;

  private constructor(primary: RedisServer, replica: RedisServer) {
    this.primary = primary;
    this.replica = replica;
  }

  /** A primary and a replica replicating it, the link up. */
  static async start(): Promise<RedisPair> {
    const primary = await startRedis();
    // A port of its own, checked like the primary's: a port held by another server would never show the link.
    const replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)]);
    const pair = new RedisPair(primary, replica);
    const probe = new Redis({ port: replica.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
    probe.on('error', () => undefined);
    try {
      await until(async () => /master_link_status:up/.test(await probe.info('replication')), 'the replication link');
    } catch (error) {
      // Not handed to the test: stopped here, or the servers would outlive the test run.
      pair.stop();
      throw error;
    } finally {
      probe.disconnect();
    }
    return pair;
  }

  /** The replica stops taking the primary's writes: what a lagging asynchronous replica has not received yet. */
  async cutReplication(): Promise<void> {
    const replica = new Redis({ port: this.replica.port });
    try {
      // A port nothing listens on (a privileged one): the replica keeps trying and receives nothing.
      await replica.replicaof('127.0.0.1', '1');
    } finally {
      replica.disconnect();
    }
  }

  /** Kills the primary at once and promotes the replica, as a failover does. */
  async failOver(): Promise<void> {
    this.primary.process.kill('SIGKILL');
    const replica = new Redis({ port: this.replica.port });
    try {
      await replica.replicaof('NO', 'ONE');
    } finally {
      replica.disconnect();
    }
  }

  stop(): void {
    for (const server of [this.primary, this.replica]) server.process.kill('SIGKILL');
  }
}
