/**
 * The local stack of `kafka-lanes local up|down|status`: a single-node Kafka broker in KRaft mode run from the
 * Apache Kafka jars Maven fetches (java and mvn on PATH), a Redis (redis-server on PATH) and, when asked, a
 * 3-master Redis Cluster (redis-cli on PATH too). Everything it writes lives under one directory of the project
 * (`.kafka-lanes/` by default): the jars per Kafka version, the broker's storage per version, logs and pid files.
 *
 * Up is idempotent: whatever already answers on a port is left alone. Down stops only what this directory's pid
 * files name (a process whose command line still matches, so a reused pid is never signalled).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST, stackPaths, type LocalStackConfig, type Log, type ServiceStatus } from './config';
import { listenerPorts } from './files';
import { ownKafkaPid, upKafka } from './kafka';
import { ownPid, portOpen, seconds, stopPid, waitPortClosed } from './processes';
import { clusterInfo, redisAnswers, upRedis, upRedisCluster } from './redis';

export { LOCAL_SERVICES, LocalStackError, newClusterId, stackPaths, type LocalService, type LocalStackConfig, type ServiceStatus } from './config';
export { portOpen } from './processes';

/**
 * The port of the Redis server this directory started: `config.redisPort`'s when it runs, else the one other
 * `redis-<port>` of the directory whose process runs (`local up --redis-port` on another port); else `config.redisPort`.
 */
function ownRedisPort(config: LocalStackConfig): number {
  const paths = stackPaths(config);
  if (ownPid(join(paths.redisDir(config.redisPort), 'redis.pid'), `:${config.redisPort}`) !== undefined || !existsSync(config.dir)) return config.redisPort;
  const running = readdirSync(config.dir)
    .map((name) => Number(/^redis-([0-9]+)$/.exec(name)?.[1]))
    .filter((port) => Number.isInteger(port) && !config.clusterPorts.includes(port) && ownPid(join(paths.redisDir(port), 'redis.pid'), `:${port}`) !== undefined);
  return running.length === 1 ? running[0]! : config.redisPort;
}

/**
 * Starts what `config.services` names and is not already answering; resolves once all answer.
 *
 * @example
 * await localUp(config, (line) => console.log(`[local] ${line}`));
 */
export async function localUp(config: LocalStackConfig, log: Log): Promise<void> {
  const t0 = Date.now();
  mkdirSync(config.dir, { recursive: true });
  // The directory is state, never source: keep it out of the project's git without touching its .gitignore.
  const ignore = join(config.dir, '.gitignore');
  if (!existsSync(ignore)) writeFileSync(ignore, '# Written by kafka-lanes local up: the local stack\'s jars, storage and logs.\n*\n');
  if (config.services.has('redis')) await upRedis(config, log);
  if (config.services.has('redis-cluster')) await upRedisCluster(config, log);
  if (config.services.has('kafka')) await upKafka(config, log);
  log(`local stack up (${seconds(t0)})`);
}

/** The Redis servers this directory started: `<dir>/redis-<port>/redis.pid` naming a live redis-server on that port. */
function ownRedis(config: LocalStackConfig): { port: number; pid: number | undefined; dir: string }[] {
  if (!existsSync(config.dir)) return [];
  return readdirSync(config.dir)
    .map((name) => /^redis-(\d+)$/.exec(name))
    .filter((match) => match !== null)
    .map((match) => {
      const port = Number(match[1]);
      const dir = join(config.dir, match[0]);
      return { port, dir, pid: ownPid(join(dir, 'redis.pid'), `:${port}`) };
    });
}

/**
 * Stops what this directory started: its broker and every Redis it started (cluster nodes included), whatever
 * ports they were given. Redis state is removed (nothing is saved); Kafka's storage is kept unless `wipe`.
 * A process another directory started is left alone, which is no failure. Resolves to false when something
 * could not be stopped.
 */
export async function localDown(config: LocalStackConfig, options: { wipe: boolean }, log: Log): Promise<boolean> {
  const paths = stackPaths(config);
  let ok = true;
  const configured = existsSync(paths.serverProperties) ? listenerPorts(readFileSync(paths.serverProperties, 'utf8')) : undefined;
  const kafkaPort = configured?.kafkaPort ?? config.kafkaPort;
  const pid = ownKafkaPid(config);
  if (pid !== undefined) {
    // A single-node KRaft broker shuts down in a few seconds; 30 s covers a slow log flush.
    ok = (await stopPid(pid, 'kafka', 30_000, log)) && ok;
    for (const port of configured === undefined ? [] : [configured.kafkaPort, configured.controllerPort]) {
      if (await waitPortClosed(port)) continue;
      log(`kafka: port ${port} is still held after the broker stopped`);
      ok = false;
    }
  } else if (await portOpen(kafkaPort)) {
    log(`kafka: ${HOST}:${kafkaPort} is running, but not started from this directory: left alone`);
  } else {
    log('kafka: not running');
  }
  rmSync(paths.pidFile, { force: true });
  if (options.wipe) {
    if (ownKafkaPid(config) !== undefined) {
      log('kafka: the broker still runs; its data is not wiped');
      ok = false;
    } else if (existsSync(config.kafkaDir)) {
      for (const name of readdirSync(config.kafkaDir)) {
        if (name === 'data' || name.startsWith('data-')) rmSync(join(config.kafkaDir, name), { recursive: true, force: true });
      }
      for (const file of [paths.clusterIdFile, paths.logs, paths.versionFile]) rmSync(file, { recursive: true, force: true });
      log('kafka: data wiped (storage of every version, logs; the jars stay)');
    }
  }
  const servers = ownRedis(config);
  // A Redis takes 1-2 s to exit after SIGTERM (a clean SHUTDOWN; nothing is saved): stop them in parallel.
  const stopped = await Promise.all(
    servers.map(async (server) => {
      if (server.pid === undefined) {
        if (!(await portOpen(server.port))) rmSync(server.dir, { recursive: true, force: true });
        return true;
      }
      if (!(await stopPid(server.pid, `redis ${server.port}`, 10_000, log))) return false;
      if (!(await waitPortClosed(server.port))) return (log(`redis ${server.port}: port still held after the server stopped`), false);
      rmSync(server.dir, { recursive: true, force: true });
      return true;
    }),
  );
  ok = stopped.every(Boolean) && ok;
  rmSync(join(config.dir, 'redis-cluster-create.out'), { force: true });
  const others = [...(config.services.has('redis') ? [config.redisPort] : []), ...(config.services.has('redis-cluster') ? config.clusterPorts : [])].filter(
    (port) => !servers.some((server) => server.port === port),
  );
  for (const port of others) if (await portOpen(port)) log(`redis ${port}: running, but not started from this directory: left alone`);
  return ok;
}

/** One line per service `config.services` names: up or down, its address, whose it is. */
export async function localStatus(config: LocalStackConfig): Promise<ServiceStatus[]> {
  const rows: ServiceStatus[] = [];
  const paths = stackPaths(config);
  if (config.services.has('kafka')) {
    // The broker this directory started listens where its configuration says, whatever the flags of this call.
    const pid = ownKafkaPid(config);
    const { kafkaPort, controllerPort } = (pid === undefined ? undefined : listenerPorts(readFileSync(paths.serverProperties, 'utf8'))) ?? config;
    const address = `${HOST}:${kafkaPort} (controller ${HOST}:${controllerPort}`;
    if (await portOpen(kafkaPort)) {
      const version = existsSync(paths.versionFile) ? readFileSync(paths.versionFile, 'utf8').trim() : 'version unknown';
      rows.push({ service: 'kafka', up: true, detail: `${address}; ${pid === undefined ? 'not started from this directory' : `Kafka ${version}, pid ${pid}, this directory`})` });
    } else {
      rows.push({ service: 'kafka', up: false, detail: `${address})` });
    }
  }
  if (config.services.has('redis')) {
    const port = ownRedisPort(config);
    const pid = ownPid(join(paths.redisDir(port), 'redis.pid'), `:${port}`);
    const up = await redisAnswers(port);
    rows.push({ service: 'redis', up, detail: `${HOST}:${port}${up ? ` (${pid === undefined ? 'not started from this directory' : `pid ${pid}, this directory`})` : ''}` });
  }
  if (config.services.has('redis-cluster')) {
    const addresses = `${HOST}:${config.clusterPorts.join(',')}`;
    const down = [];
    for (const port of config.clusterPorts) if (!(await redisAnswers(port))) down.push(port);
    const state = config.clusterPorts[0] === undefined ? undefined : (await clusterInfo(config.clusterPorts[0]))['cluster_state'];
    if (down.length === 0 && state === 'ok') rows.push({ service: 'redis-cluster', up: true, detail: `${addresses} (cluster_state:ok)` });
    else if (down.length === config.clusterPorts.length) rows.push({ service: 'redis-cluster', up: false, detail: addresses });
    else rows.push({ service: 'redis-cluster', up: false, detail: `${addresses} (nodes not answering: ${down.join(' ') || 'none'}; cluster_state:${state ?? '?'})` });
  }
  return rows;
}
