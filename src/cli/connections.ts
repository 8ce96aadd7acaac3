import type { Command } from 'commander';
import { Kafka, logLevel, type Admin, type KafkaConfig } from 'kafkajs';
import type { CompletionStore } from '../completion/store';
import { describeConnectionError, watchConnection } from '../admin/connection-errors';
import { brokersId, kafkaClientConfig, openStore } from '../connections';
import { ConfigError, LanesError } from '../errors';
import { DEFAULTS, ENV, resolveOptions } from '../options';
import type { LanesOptions } from '../options/lanes-options';

/**
 * The Kafka and Redis connections of the CLI: flags first, then the environment variables the handler reads
 * (brokers or an MSK cluster ARN, TLS, SASL including MSK IAM, Redis TLS and AUTH), then the local stack.
 * Everything is validated by the handler's own option schema, so a bad variable fails the same way.
 */

export interface KafkaFlags {
  readonly brokers?: string;
}

export interface RedisFlags {
  readonly redisUrl?: string;
  readonly redisClusterNodes?: string;
}

/** Where the CLI looks for Kafka when neither flags nor environment name brokers. */
export const LOCAL_BROKERS = ['127.0.0.1:9092'];

/** Adds `--brokers`. */
export function kafkaOptions(command: Command): Command {
  return command.option(
    '--brokers <host:port,...>',
    `Kafka brokers (default: $${ENV.brokers}, else the brokers of $${ENV.mskClusterArn}, else ${LOCAL_BROKERS.join(',')}); ` +
      `TLS and SASL from $${ENV.ssl} and $${ENV.saslMechanism} (with _USERNAME, _PASSWORD or _SECRET; or aws-iam)`,
  );
}

/** Adds `--redis-url` and `--redis-cluster-nodes`. */
export function redisOptions(command: Command): Command {
  return command
    .option('--redis-url <url>', `one Redis server (default: $${ENV.redisUrl}, else ${DEFAULTS.redis.url})`)
    .option(
      '--redis-cluster-nodes <host:port,...>',
      `seeds of a Redis Cluster (default: $${ENV.redisClusterNodes}); TLS and AUTH from $${ENV.redisTls}, $${ENV.redisAuthToken} or $${ENV.redisAuthSecret}`,
    );
}

function list(text: string): string[] {
  return text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
}

/**
 * The connection options for a CLI run, validated like a handler's; `env` is where the variables are read.
 *
 * @throws OptionsError naming the flag's option or the environment variable that is wrong.
 */
export function connectionOptions(group: string, flags: KafkaFlags & RedisFlags, env: NodeJS.ProcessEnv = process.env): Pick<LanesOptions, 'kafka' | 'redis'> {
  if (flags.redisUrl !== undefined && flags.redisClusterNodes !== undefined) {
    throw new ConfigError('Expected `--redis-url` (one server) or `--redis-cluster-nodes` (a cluster), got both');
  }
  const options = resolveOptions({
    group,
    kafka: flags.brokers === undefined ? {} : { brokers: list(flags.brokers) },
    redis: {
      ...(flags.redisUrl === undefined ? {} : { url: flags.redisUrl }),
      ...(flags.redisClusterNodes === undefined ? {} : { clusterNodes: list(flags.redisClusterNodes) }),
    },
  }, env);
  return { kafka: options.kafka, redis: options.redis };
}

/**
 * Runs a kafkajs `connect`; a socket error (a refused port, an unknown host) is named as such, with the brokers.
 *
 * @example
 * await connectKafka(options.kafka, () => producer.connect());
 */
export async function connectKafka<T>(options: LanesOptions['kafka'], connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    const explained = describeConnectionError(error);
    if (explained === (error instanceof Error ? error.message : String(error))) throw error;
    throw new LanesError(`Kafka (${brokersId(options, LOCAL_BROKERS)}) not reachable: ${explained}`, { retriable: true, cause: error });
  }
}

/**
 * The kafkajs client of a CLI command: brokers, TLS and SASL from `options` (else the local stack), quiet, with a
 * connect timeout a person waits for; `tuning` overrides (the doctor's short timeouts and no retries).
 *
 * @example
 * const kafka = await cliKafka(connectionOptions(group, flags).kafka, 'kafka-lanes-cli');
 */
export async function cliKafka(options: LanesOptions['kafka'], clientId: string, tuning: Pick<KafkaConfig, 'connectionTimeout' | 'requestTimeout' | 'retry'> = {}): Promise<Kafka> {
  return new Kafka({
    ...(await kafkaClientConfig({ ...options, clientId }, LOCAL_BROKERS)),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
    ...tuning,
  });
}

/** Runs `work` with a kafkajs client made from the flags, the environment or the local default. */
export async function withKafka<T>(group: string, flags: KafkaFlags, work: (kafka: Kafka) => Promise<T>): Promise<T> {
  const { kafka: options } = connectionOptions(group, flags);
  const kafka = await cliKafka(options, 'kafka-lanes-cli');
  return connectKafka(options, () => work(kafka));
}

/** Runs `work` with a connected kafkajs admin, disconnected afterwards. */
export async function withAdmin<T>(group: string, flags: KafkaFlags, work: (admin: Admin) => Promise<T>): Promise<T> {
  const { kafka: options } = connectionOptions(group, flags);
  const admin = (await cliKafka(options, 'kafka-lanes-cli')).admin();
  await connectKafka(options, () => admin.connect());
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}

function redisWhere(options: LanesOptions['redis']): string {
  if (options.clusterNodes.length > 0) return options.clusterNodes.join(',');
  try {
    const url = new URL(options.url);
    return `${url.hostname}:${url.port === '' ? '6379' : url.port}`;
  } catch {
    return 'the configured URL';
  }
}

/** The completion store on a Redis connection from the flags, the environment or the local default; closed after `work`. */
export async function withStore<T>(group: string, flags: RedisFlags, work: (store: CompletionStore) => Promise<T>): Promise<T> {
  const { redis: options } = connectionOptions(group, flags);
  // A CLI run should fail, not hang, when Redis is unreachable.
  const store = await openStore(
    options,
    { maxRetriesPerRequest: 1, connectTimeout: 5_000, commandTimeout: 10_000, retryStrategy: () => null },
    { clusterRetryStrategy: () => null },
  );
  const watch = watchConnection(store);
  try {
    return await work(store);
  } catch (error) {
    const explained = watch.explain(error);
    if (explained === (error instanceof Error ? error.message : String(error))) throw error;
    throw new LanesError(`Redis (${redisWhere(options)}) not reachable: ${explained}`, { retriable: true, cause: error });
  } finally {
    store.disconnect();
  }
}
