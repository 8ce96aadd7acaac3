/** What `kafka-lanes local` works on: its configuration, where its state lives, its errors. */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export type LocalService = 'kafka' | 'redis' | 'redis-cluster';
export const LOCAL_SERVICES: readonly LocalService[] = ['kafka', 'redis', 'redis-cluster'];

/** What `local up|down|status` works on: every path absolute. */
export interface LocalStackConfig {
  /** The state directory: jars, storage, logs, pid files. */
  readonly dir: string;
  readonly services: ReadonlySet<LocalService>;
  readonly kafkaVersion: string;
  readonly kafkaPort: number;
  readonly controllerPort: number;
  /** The broker's own directory (storage, logs, pid file); `<dir>/kafka` unless a second broker needs its own. */
  readonly kafkaDir: string;
  readonly redisPort: number;
  readonly clusterPorts: readonly number[];
  /** How long `up` waits for a started broker to answer. */
  readonly readyTimeoutMs: number;
  /** JVM heap flags of the broker. */
  readonly heapOpts: string;
  /**
   * Fetch the broker jars even when a broker already answers on the port (another project's): this repository's
   * tests start brokers of their own from them.
   */
  readonly fetchJars?: boolean;
}

/** One line of `local status`. */
export interface ServiceStatus {
  readonly service: LocalService;
  readonly up: boolean;
  readonly detail: string;
}

/** A local stack problem the user fixes (a missing tool, a taken port); the CLI prints its message alone. */
export class LocalStackError extends Error {
  override readonly name = 'LocalStackError';
}

export const HOST = '127.0.0.1';

/** Where the state of `config` lives. Pure. */
export function stackPaths(config: LocalStackConfig) {
  const logs = join(config.kafkaDir, 'logs');
  return {
    libs: join(config.dir, 'kafka-libs', config.kafkaVersion),
    // Storage per version: a log formatted by a newer Kafka is not readable by an older one.
    data: join(config.kafkaDir, `data-${config.kafkaVersion}`),
    logs,
    pidFile: join(config.kafkaDir, 'kafka.pid'),
    serverProperties: join(config.kafkaDir, 'server.properties'),
    log4j: join(config.kafkaDir, 'log4j.properties'),
    clusterIdFile: join(config.kafkaDir, 'cluster-id'),
    // The version of the broker this directory started last.
    versionFile: join(config.kafkaDir, 'version'),
    stdout: join(logs, 'kafka.out'),
    serverLog: join(logs, 'server.log'),
    redisDir: (port: number) => join(config.dir, `redis-${port}`),
  };
}

/** A KRaft cluster id as Kafka's `Uuid` prints one: 16 random bytes, base64url; never starting with `-`. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** Where `local` prints its progress. */
export type Log = (line: string) => void;
