import type { Cluster, ClusterOptions, Redis, RedisOptions as IoRedisOptions } from 'ioredis';
import { defineScripts } from '../completion/scripts';
import type { Telemetry } from '../telemetry';
import type { LanesOptions, RedisOptions } from '../options/lanes-options';
import { commonJsExports } from './interop';
import { checkEvictionPolicy, RedisServer } from '../completion/redis-server';
import type { CompletionStore } from '../completion/store';
import { withRedisSecret, type SecretDeps } from './secrets';

/** The ioredis module's exports. */
export type IoRedisModule = typeof import('ioredis');

let ioredis: Promise<IoRedisModule> | undefined;

/**
 * The ioredis module, loaded on the first call (the first invocation opens the connection): a cold start does not
 * read, compile or evaluate it (~90 KiB of a minified bundle). An `import()`, as `importKafkaJs` explains.
 */
export function importIoRedis(): Promise<IoRedisModule> {
  ioredis ??= import('ioredis').then(
    (module) => commonJsExports(module, 'Redis'),
    (error: unknown) => {
      ioredis = undefined;
      throw error;
    },
  );
  return ioredis;
}

/**
 * The Redis client of the framework from the resolved `redis` options: one server or a cluster, with TLS
 * (ElastiCache in-transit encryption) and AUTH (token or ACL user) when configured.
 */

export type RedisConnectionConfig =
  | { readonly kind: 'server'; readonly url: string; readonly options: IoRedisOptions }
  | { readonly kind: 'cluster'; readonly nodes: ReadonlyArray<{ host: string; port: number }>; readonly options: ClusterOptions };

/** Whether the connection uses TLS: as given, else for a `rediss://` URL of a single server. */
export function redisUsesTls(redis: RedisOptions): boolean {
  return redis.tls ?? (redis.clusterNodes.length === 0 && redis.url.startsWith('rediss:'));
}

/**
 * The ioredis constructor arguments, `common` (timeouts, retries) merged in. Pure.
 *
 * @example
 * redisConnectionConfig({ url: '', clusterNodes: ['clustercfg.orders.abc.euw1.cache.amazonaws.com:6379'], tls: true, password: 't' });
 * // { kind: 'cluster', nodes: [...], options: { dnsLookup, redisOptions: { tls: {}, password: 't', ... } } }
 */
export function redisConnectionConfig(redis: RedisOptions, common: IoRedisOptions = {}): RedisConnectionConfig {
  const auth: IoRedisOptions = {
    ...(redis.username === undefined ? {} : { username: redis.username }),
    ...(redis.password === undefined ? {} : { password: redis.password }),
  };
  const tls = redisUsesTls(redis);
  if (redis.clusterNodes.length === 0) {
    // A `rediss://` URL makes ioredis use TLS by itself; `tls: true` with `redis://` asks for it.
    return { kind: 'server', url: redis.url, options: { ...common, ...auth, ...(tls ? { tls: {} } : {}) } };
  }
  const nodes = redis.clusterNodes.map((node) => {
    const cut = node.lastIndexOf(':');
    return { host: node.slice(0, cut).replace(/^\[(.*)\]$/, '$1'), port: Number(node.slice(cut + 1)) };
  });
  return {
    kind: 'cluster',
    nodes,
    options: {
      redisOptions: { ...common, ...auth, ...(tls ? { tls: {} } : {}) },
      // ElastiCache with TLS: the certificate names the configuration endpoint's host names, not the IPs a
      // DNS lookup would turn them into, so the nodes are addressed by name (ioredis' documented setting).
      ...(tls ? { dnsLookup: (address: string, callback: (error: null, address: string) => void) => callback(null, address) } : {}),
    },
  };
}

/**
 * A Redis client from the resolved `redis` options; ioredis is loaded at the first call, and the AUTH token of
 * `passwordSecret` read then (once per process).
 *
 * @example
 * const redis = await createRedis(options.redis, { maxRetriesPerRequest: 2, connectTimeout: 2_000 });
 */
export async function createRedis(
  redis: RedisOptions,
  common: IoRedisOptions = {},
  cluster: Omit<ClusterOptions, 'redisOptions'> = {},
  deps: SecretDeps = {},
): Promise<Redis | Cluster> {
  const [{ Cluster, Redis }, auth] = await Promise.all([importIoRedis(), withRedisSecret(redis, deps)]);
  const config = redisConnectionConfig(auth, common);
  if (config.kind === 'server') return new Redis(config.url, config.options);
  return new Cluster(
    config.nodes.map((node) => ({ ...node })),
    { ...cluster, ...config.options },
  );
}

/** Connections a handler keeps across invocations of one Lambda execution environment. */
export async function connectRedis(options: LanesOptions, telemetry: Telemetry, deps: SecretDeps = {}): Promise<Redis | Cluster> {
  // Fail fast: a command waits for at most two reconnects, so an unreachable Redis makes the batch
  // report its records as not handed off well before the Lambda deadline.
  // A command that gets no answer (a silent node, a connection dropped while Lambda was frozen) fails
  // after `commandTimeout` instead of holding the invocation past its deadline.
  const common: IoRedisOptions = { maxRetriesPerRequest: 2, connectTimeout: 2_000, commandTimeout: 3_000, keepAlive: 10_000 };
  const redis = await createRedis(options.redis, common, {}, deps);
  // Without a listener ioredis prints every reconnect error; failed commands already surface per batch.
  redis.on('error', (error: Error) => telemetry.logger.warn('Redis connection error', { error: error.message }));
  // Every invocation runs scripts: they are registered with the connection, and so load with the handler.
  defineScripts(redis);
  // docs/durability.md: a Redis that evicts keys would lose completion state silently; refused at start-up.
  try {
    await checkEvictionPolicy(redis);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  return redis;
}

/**
 * The completion store on a new connection from the resolved `redis` options (`createRedis`'s arguments): the door
 * every other folder is given instead of the client. Closed with `store.close()` or `store.disconnect()`.
 *
 * @example
 * const store = await openStore(options.redis, { maxRetriesPerRequest: 1 });
 * try { await readStatus({ group, admin, store }); } finally { store.disconnect(); }
 */
export async function openStore(
  redis: RedisOptions,
  common: IoRedisOptions = {},
  cluster: Omit<ClusterOptions, 'redisOptions'> = {},
  deps: SecretDeps = {},
): Promise<CompletionStore> {
  const [{ CompletionStore }, client] = await Promise.all([import('../completion/store'), createRedis(redis, common, cluster, deps)]);
  return new CompletionStore(client);
}

/** `connectRedis`'s connection (kept across invocations, its eviction policy checked) as the group's completion store. */
export async function connectStore(options: LanesOptions, telemetry: Telemetry, deps: SecretDeps = {}): Promise<CompletionStore> {
  // Loaded with the connection, as ioredis is: importing this module loads no completion engine.
  const [{ CompletionStore }, client] = await Promise.all([import('../completion/store'), connectRedis(options, telemetry, deps)]);
  return new CompletionStore(client, options.caps);
}

/**
 * The server door of one node on `host:port`, on a connection of its own that gives up at once: no retry, no queue
 * while disconnected, every command bounded by `timeoutMs` (the local stack asks a node it runs whether it answers).
 *
 * @example
 * const node = await openNode('127.0.0.1', 6379, 1_000);
 * try { await node.ping(); } finally { node.disconnect(); }
 */
export async function openNode(host: string, port: number, timeoutMs: number): Promise<RedisServer> {
  const { Redis } = await importIoRedis();
  const redis = new Redis({
    host, port, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: true,
    disconnectTimeout: 200,
  });
  // A node that does not answer is an answer here, not an error to print.
  redis.on('error', () => undefined);
  return new RedisServer(redis);
}
