import type { Command } from 'commander';
import { Cluster, Redis } from 'ioredis';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { ConfigError } from '../errors';
import type { RedisClient } from '../completion/scripts';
import { DEFAULTS, ENV } from '../options';

/**
 * The Kafka and Redis connections of the CLI: flags first, then the same environment variables the
 * handler reads, then the local stack's defaults.
 */

export interface KafkaFlags {
  readonly brokers?: string;
}

export interface RedisFlags {
  readonly redisUrl?: string;
  readonly redisClusterNodes?: string;
}

const LOCAL_BROKERS = '127.0.0.1:9092';

/** Adds `--brokers`. */
export function kafkaOptions(command: Command): Command {
  return command.option('--brokers <host:port,...>', `Kafka brokers (default: $${ENV.brokers}, else ${LOCAL_BROKERS})`);
}

/** Adds `--redis-url` and `--redis-cluster-nodes`. */
export function redisOptions(command: Command): Command {
  return command
    .option('--redis-url <url>', `one Redis server (default: $${ENV.redisUrl}, else ${DEFAULTS.redis.url})`)
    .option('--redis-cluster-nodes <host:port,...>', `seeds of a Redis Cluster (default: $${ENV.redisClusterNodes})`);
}

/**
 * `a:1,b:2` as a list of `host:port`.
 *
 * @throws ConfigError naming the flag, what was expected and what was given.
 */
export function parseHostPorts(text: string, flag: string): Array<{ host: string; port: number }> {
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length === 0) throw new ConfigError(`Expected \`${flag}\` to list \`host:port\` entries, got \`${text}\``);
  return entries.map((entry) => {
    const cut = entry.lastIndexOf(':');
    const port = Number(entry.slice(cut + 1));
    if (cut < 1 || !/^[0-9]+$/.test(entry.slice(cut + 1)) || port < 1 || port > 65_535) {
      throw new ConfigError(`Expected \`${flag}\` to list \`host:port\` entries with a port from 1 to 65535, got \`${entry}\``);
    }
    return { host: entry.slice(0, cut).replace(/^\[(.*)\]$/, '$1'), port };
  });
}

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

/** The brokers from `--brokers`, the environment or the local stack. */
export function brokersOf(flags: KafkaFlags): string[] {
  const text = flags.brokers ?? env(ENV.brokers) ?? LOCAL_BROKERS;
  return parseHostPorts(text, flags.brokers === undefined && env(ENV.brokers) !== undefined ? ENV.brokers : '--brokers').map(
    ({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`,
  );
}

/** Runs `work` with a connected kafkajs admin, disconnected afterwards. */
export async function withAdmin<T>(flags: KafkaFlags, work: (admin: Admin) => Promise<T>): Promise<T> {
  const kafka = new Kafka({ clientId: 'kafka-lanes-cli', brokers: brokersOf(flags), logLevel: logLevel.NOTHING, connectionTimeout: 5_000 });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

/** A Redis connection from the flags, the environment or the local default; closed after `work`. */
export async function withRedis<T>(flags: RedisFlags, work: (redis: RedisClient) => Promise<T>): Promise<T> {
  const redis = connectRedis(flags);
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

function connectRedis(flags: RedisFlags): RedisClient {
  if (flags.redisUrl !== undefined && flags.redisClusterNodes !== undefined) {
    throw new ConfigError('Expected `--redis-url` (one server) or `--redis-cluster-nodes` (a cluster), got both');
  }
  // A CLI run should fail, not hang, when Redis is unreachable.
  const common = { maxRetriesPerRequest: 1, connectTimeout: 5_000, commandTimeout: 10_000, retryStrategy: () => null };
  let url = flags.redisUrl;
  let nodes = flags.redisClusterNodes;
  let flag = '--redis-cluster-nodes';
  if (url === undefined && nodes === undefined) {
    url = env(ENV.redisUrl);
    nodes = env(ENV.redisClusterNodes);
    flag = ENV.redisClusterNodes;
    if (url !== undefined && nodes !== undefined) {
      throw new ConfigError(`Expected \`${ENV.redisUrl}\` (one server) or \`${ENV.redisClusterNodes}\` (a cluster), got both`);
    }
  }
  if (nodes !== undefined) {
    return new Cluster(parseHostPorts(nodes, flag), { redisOptions: common, clusterRetryStrategy: () => null });
  }
  return new Redis(url ?? DEFAULTS.redis.url, common);
}
