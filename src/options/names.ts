/**
 * Every name derived from a consumer group, in one module: retry tier topics, the dead-letter topic, the
 * completion group and the Redis key prefixes (docs/ARCHITECTURE.md, "Copies and their headers"). Pure, no imports beyond this
 * file, so the completion engine and the committer can use it without loading option validation.
 */

/**
 * Escapes a group or topic name for a Redis key: a `{`, `}` or `:` in a name (Kafka allows almost anything
 * in a group id) cannot end a hash tag early or make two different partitions share one tag.
 *
 * @example
 * escapeName('a:b{c}'); // 'a%3Ab%7Bc%7D'
 */
export function escapeName(name: string): string {
  return name.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/**
 * The retry topic of one tier.
 *
 * @example
 * retryTopic('orders-svc', '5s'); // 'orders-svc.retry.5s'
 */
export function retryTopic(group: string, tier: string): string {
  return `${retryTopicPrefix(group)}${tier}`;
}

/** What every retry topic of a group starts with: `<group>.retry.` */
export function retryTopicPrefix(group: string): string {
  return `${group}.retry.`;
}

/**
 * The tier of a retry topic of `group`: `'5s'` for `orders.retry.5s`, `undefined` when `topic` is not a
 * retry topic of the group at all. The tier is not checked against the configured tiers (see `tierOfTopic`).
 *
 * @example
 * retryTierOf('orders', 'orders.retry.1m'); // '1m'
 * retryTierOf('orders', 'orders'); // undefined
 */
export function retryTierOf(group: string, topic: string): string | undefined {
  const prefix = retryTopicPrefix(group);
  return topic.startsWith(prefix) && topic.length > prefix.length ? topic.slice(prefix.length) : undefined;
}

/**
 * The dead-letter topic of a group.
 *
 * @example
 * deadLetterTopic('orders-svc'); // 'orders-svc.dlq'
 */
export function deadLetterTopic(group: string): string {
  return `${group}.dlq`;
}

/**
 * The completion group: a Kafka consumer group with no members, to which the committer commits each
 * partition's frontier, so standard lag tools show true progress (docs/ARCHITECTURE.md, "The committer").
 *
 * @example
 * completionGroupId('orders'); // 'orders.lanes'
 */
export function completionGroupId(group: string): string {
  return `${group}.lanes`;
}

/**
 * The prefix of the consumer groups a recovery reads a partition again in (one per read, with a random suffix, so
 * concurrent recoveries never join one group): granted as `<group>.lanes.recover.*`.
 *
 * @example
 * recoveryGroupPrefix('orders'); // 'orders.lanes.recover.'
 */
export function recoveryGroupPrefix(group: string): string {
  return `${completionGroupId(group)}.recover.`;
}

/**
 * The hash tag of a group's own Redis keys (the tracked-partitions set, the committer's lease and readings):
 * one slot per group on Redis Cluster.
 *
 * @example
 * groupTag('orders'); // '{kl:orders}'
 */
export function groupTag(group: string): string {
  return `{kl:${escapeName(group)}}`;
}

/**
 * The hash tag shared by every key of one (group, topic, partition), so every script touches one slot.
 *
 * @example
 * partitionTagOf('orders', 'orders-v1', 3); // '{kl:orders:orders-v1:3}'
 */
export function partitionTagOf(group: string, topic: string, partition: number): string {
  return `{kl:${escapeName(group)}:${escapeName(topic)}:${partition}}`;
}
