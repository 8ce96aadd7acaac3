/** The local Redis and Redis Cluster: started with redis-server, asked through the server door on an ioredis connection. */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisServer } from '../../completion/redis-server';
import { openNode } from '../../connections/redis';
import { HOST, LocalStackError, stackPaths, type LocalStackConfig, type Log } from './config';
import { sleep } from '../../deadline';
import { requireTool, runTool, seconds, tail } from './processes';

/** Asks the Redis on 127.0.0.1:<port> through its server door, on a connection of its own; undefined when it does not answer. */
async function askNode<T>(port: number, ask: (server: RedisServer) => Promise<T>, timeoutMs = 1000): Promise<T | undefined> {
  const server = await openNode(HOST, port, timeoutMs);
  try {
    return await ask(server);
  } catch {
    return undefined;
  } finally {
    server.disconnect();
  }
}

export const redisAnswers = async (port: number): Promise<boolean> => (await askNode(port, async (server) => (await server.ping(), true))) === true;

export async function waitForRedis(port: number): Promise<boolean> {
  for (let i = 0; i < 50; i++, await sleep(100)) if (await redisAnswers(port)) return true;
  return false;
}

export async function clusterInfo(port: number): Promise<Record<string, string>> {
  const text = (await askNode(port, (server) => server.clusterState())) ?? '';
  return Object.fromEntries(text.split('\r\n').map((line) => line.split(':') as [string, string]).filter((pair) => pair.length === 2));
}

export async function startRedis(config: LocalStackConfig, port: number, name: string, extra: readonly string[]): Promise<void> {
  const dir = stackPaths(config).redisDir(port);
  mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', HOST, '--daemonize', 'yes', '--save', '', '--appendonly', 'no', ...extra];
  const result = spawnSync('redis-server', [...args, '--dir', dir, '--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log')], { encoding: 'utf8' });
  if (result.status !== 0 || !(await waitForRedis(port))) {
    throw new LocalStackError(`${name}: redis-server did not answer on ${HOST}:${port}; see ${join(dir, 'redis.log')}${result.stderr ? `\n${result.stderr.trim()}` : ''}`);
  }
}

export async function upRedis(config: LocalStackConfig, log: Log): Promise<void> {
  if (await redisAnswers(config.redisPort)) return log(`redis: already up on ${HOST}:${config.redisPort}`);
  requireTool('redis-server', 'The local Redis');
  await startRedis(config, config.redisPort, 'redis', []);
  log(`redis: started on ${HOST}:${config.redisPort}`);
}

export async function upRedisCluster(config: LocalStackConfig, log: Log): Promise<void> {
  const t0 = Date.now();
  const ports = config.clusterPorts;
  requireTool('redis-server', 'The local Redis Cluster');
  requireTool('redis-cli', 'The local Redis Cluster');
  for (const port of ports) {
    if (await redisAnswers(port)) continue;
    const dir = stackPaths(config).redisDir(port);
    await startRedis(config, port, `redis-cluster node ${port}`, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-node-timeout', '5000']);
    log(`redis-cluster: started node ${HOST}:${port}`);
  }
  const infos = await Promise.all(ports.map(clusterInfo));
  const created = infos.every((info) => info['cluster_known_nodes'] === String(ports.length) && info['cluster_slots_assigned'] === '16384');
  if (!created) {
    // Half-made (a node restarted without its peers, an interrupted create): start over. `--cluster create`
    // refuses nodes that know other nodes or hold keys, and these nodes hold local data only.
    for (const port of ports) {
      await askNode(port, (server) => server.flushAll());
      await askNode(port, (server) => server.resetCluster());
    }
    log(`redis-cluster: creating a cluster of ${ports.length} masters`);
    const out = join(config.dir, 'redis-cluster-create.out');
    const code = await runTool('redis-cli', ['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes'], out);
    if (code !== 0) throw new LocalStackError(`redis-cluster: redis-cli --cluster create failed:\n${tail(out, 40)}`);
  }
  for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
    const states = await Promise.all(ports.map(async (port) => (await clusterInfo(port))['cluster_state']));
    if (states.every((state) => state === 'ok')) break;
    if (Date.now() > deadline) throw new LocalStackError(`redis-cluster: cluster_state is not ok after 30s (redis-cli -p ${ports[0]} cluster info)`);
  }
  log(`redis-cluster: up on ${HOST}:${ports.join(',')} (cluster_state:ok, ${seconds(t0)})`);
}
