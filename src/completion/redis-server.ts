import type { Cluster, Redis } from 'ioredis';
import { ConfigError } from '../errors';
import type { RedisClient } from './scripts';

/**
 * What the framework asks the Redis server rather than its state: its eviction policy (a start-up guard of the
 * completion state, and a row of `kafka-lanes doctor`), its cluster mode and a PING's round trip (`doctor`).
 */

/**
 * Pure: what is wrong with a Redis `maxmemory-policy` for kafka-lanes, or `undefined` when nothing is. An
 * `allkeys-*` policy evicts any key when memory runs short: a park list, a lane head, done bits, silently. The
 * framework sets no TTL on its state, so `volatile-*` policies never evict it (they refuse writes like
 * `noeviction` does, which the framework reports as back-pressure).
 *
 * @example
 * evictionProblem('allkeys-lru'); // 'Expected Redis `maxmemory-policy` to be `noeviction` ...'
 * evictionProblem('noeviction'); // undefined
 */
export function evictionProblem(policy: string | undefined): string | undefined {
  if (policy === undefined || !policy.startsWith('allkeys-')) return undefined;
  return (
    `Expected Redis \`maxmemory-policy\` to be \`noeviction\` (or a \`volatile-*\` policy: kafka-lanes keys carry no TTL), got \`${policy}\`: ` +
    'an evicting policy deletes completion state (parked records, lane heads, done bits) when memory runs short. ' +
    'Set `maxmemory-policy noeviction` (ElastiCache: in the parameter group)'
  );
}

/** The `maxmemory_policy` line of `INFO memory` (readable where `CONFIG` is not, as on ElastiCache). */
export function policyOfInfo(info: string): string | undefined {
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

/**
 * Refuses, at start-up, a Redis (every master of a cluster) whose `maxmemory-policy` evicts keys. One `INFO memory`
 * per node, once per connection. A server that will not answer `INFO` (an ACL without it) is let through: the
 * check is a guard, not a permission the framework needs.
 */
export async function checkEvictionPolicy(redis: Redis | Cluster): Promise<void> {
  // The first call connects (a cluster learns its masters from it); a cluster's other masters are asked next.
  const nodes: Array<Redis | Cluster> = [redis, ...('nodes' in redis ? redis.nodes('master') : [])];
  for (const node of nodes) {
    let info: string;
    try {
      info = await node.info('memory');
    } catch {
      continue;
    }
    const problem = evictionProblem(policyOfInfo(info));
    if (problem !== undefined) throw new ConfigError(problem);
  }
}

/** One PING (`doctor` times a few). */
export async function pingRedis(redis: RedisClient): Promise<void> {
  await redis.ping();
}

/** The `maxmemory-policy` of every master (every master of a cluster holds state), one `INFO memory` each. */
export function readEvictionPolicies(redis: RedisClient): Promise<Array<string | undefined>> {
  const nodes: RedisClient[] = 'nodes' in redis ? redis.nodes('master') : [redis];
  return Promise.all(nodes.map(async (node) => policyOfInfo(await node.info('memory'))));
}

/** `INFO cluster` as the server answers it. */
export function readClusterInfo(redis: RedisClient): Promise<string> {
  return redis.info('cluster');
}

/**
 * The door to the server itself: what `kafka-lanes doctor` asks (opened by the completion store, `store.server()`, on
 * its connection), and what the local stack asks of one node it runs (opened by `connections/`'s `openNode`, on a
 * connection of its own that `disconnect()` drops).
 *
 * @example
 * const policies = await store.server().evictionPolicies();
 */
export class RedisServer {
  readonly #redis: RedisClient;

  constructor(redis: RedisClient) {
    this.#redis = redis;
  }

  /** One PING. */
  ping(): Promise<void> {
    return pingRedis(this.#redis);
  }

  /** The `maxmemory-policy` of every master. */
  evictionPolicies(): Promise<Array<string | undefined>> {
    return readEvictionPolicies(this.#redis);
  }

  /** `INFO cluster` as the server answers it. */
  clusterInfo(): Promise<string> {
    return readClusterInfo(this.#redis);
  }

  /** `CLUSTER INFO`: the node's view of its cluster (`cluster_state`, `cluster_known_nodes`, ...), as the server answers it. */
  async clusterState(): Promise<string> {
    return String(await this.#redis.call('CLUSTER', 'INFO'));
  }

  /** Deletes every key of the node (the local stack, before it makes a half-made cluster again). */
  async flushAll(): Promise<void> {
    await this.#redis.flushall();
  }

  /** `CLUSTER RESET HARD`: the node forgets its cluster (the local stack, before it makes one again). */
  async resetCluster(): Promise<void> {
    await this.#redis.call('CLUSTER', 'RESET', 'HARD');
  }

  /** Drops the connection this door was opened on. */
  disconnect(): void {
    this.#redis.disconnect();
  }
}
