import { Cluster, type Redis } from 'ioredis';
import { escapeName, partitionTag } from './keys';
import type { RedisClient } from './scripts';
import { readTrackedMembers } from './tracked';
import type { PartitionRef } from '../ports/partition';

/**
 * Finding a group's completion state in Redis without knowing its partitions: SCAN on the group's key prefix,
 * on every master of a Cluster (a SCAN walks one node's keyspace only).
 */

/** `text` with Redis glob characters escaped, so it matches itself only inside a MATCH pattern. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The MATCH pattern of every key of a group's partitions, or of one topic's, or of one partition's.
 *
 * @example
 * partitionKeysPattern('orders-svc'); // '{kl:orders-svc:*:*}:*'
 * partitionKeysPattern('orders-svc', 'orders', 3); // '{kl:orders-svc:orders:3}:*'
 */
export function partitionKeysPattern(group: string, topic?: string, partition?: number): string {
  const g = escapeGlob(escapeName(group));
  if (topic === undefined) return `{kl:${g}:*:*}:*`;
  return `{kl:${g}:${escapeGlob(escapeName(topic))}:${partition === undefined ? '*' : String(partition)}}:*`;
}

/**
 * The pattern of a partition's park lists, for a recovery to find the ones a lost state left behind.
 *
 * @example
 * parkKeysPattern({ group: 'orders-svc', topic: 'orders', partition: 3 }); // '{kl:orders-svc:orders:3}:park:*'
 */
export function parkKeysPattern(ref: PartitionRef): string {
  return `${escapeGlob(partitionTag(ref))}:park:*`;
}

/** Inverse of `escapeName`. */
export function unescapeName(name: string): string {
  return name.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * The partition a completion key belongs to, or `undefined` if it is not one of `group`'s partition keys.
 *
 * @example
 * partitionOfKey('orders-svc', '{kl:orders-svc:orders:3}:meta'); // { group: 'orders-svc', topic: 'orders', partition: 3 }
 */
export function partitionOfKey(group: string, key: string): PartitionRef | undefined {
  const prefix = `{kl:${escapeName(group)}:`;
  if (!key.startsWith(prefix)) return undefined;
  const close = key.indexOf('}', prefix.length);
  if (close < 0 || key[close + 1] !== ':') return undefined;
  const inner = key.slice(prefix.length, close);
  // Escaped names hold no `:`, so the last one separates the topic from the partition.
  const cut = inner.lastIndexOf(':');
  const partition = Number(inner.slice(cut + 1));
  if (cut < 1 || !/^[0-9]+$/.test(inner.slice(cut + 1)) || !Number.isSafeInteger(partition)) return undefined;
  const topic = inner.slice(0, cut);
  if (topic.includes(':')) return undefined;
  return { group, topic: unescapeName(topic), partition };
}

/** Every key matching `pattern`, on every master of a Cluster, each once. */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  if (redis instanceof Cluster && redis.status !== 'ready') {
    // The masters are known only once the cluster client has read the slots.
    await new Promise<void>((resolve, reject) => {
      redis.once('ready', resolve);
      redis.once('end', () => reject(new Error('Redis Cluster connection ended before it was ready')));
    });
  }
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const keys = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      for (const key of batch) keys.add(key);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...keys].sort();
}

/** The partitions a group has completion state for: its tracked set and a SCAN of its keys (on every master). */
export async function findPartitions(redis: RedisClient, group: string): Promise<PartitionRef[]> {
  const found = new Map<string, PartitionRef>();
  for (const member of await readTrackedMembers(redis, group)) {
    const cut = member.lastIndexOf('\n');
    const partition = Number(member.slice(cut + 1));
    if (cut > 0 && Number.isSafeInteger(partition)) found.set(member, { group, topic: member.slice(0, cut), partition });
  }
  for (const key of await scanKeys(redis, partitionKeysPattern(group))) {
    const ref = partitionOfKey(group, key);
    if (ref !== undefined) found.set(`${ref.topic}\n${ref.partition}`, ref);
  }
  return [...found.values()];
}
