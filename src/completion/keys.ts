import type { PartitionRef } from './types';

/**
 * Every Redis key name is built here and nowhere else.
 *
 * All keys of one (group, topic, partition) share the hash tag `{kl:<group>:<topic>:<partition>}` so every
 * script touches a single slot and runs unchanged on Redis Cluster. Group and topic are percent-escaped:
 * a `{`, `}` or `:` in a group name (Kafka allows almost anything there) cannot end the tag early or make
 * two different partitions share one tag.
 */
export function escapeName(name: string): string {
  return name.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** The hash tag shared by every key of one partition. */
export function partitionTag(ref: PartitionRef): string {
  return `{kl:${escapeName(ref.group)}:${escapeName(ref.topic)}:${ref.partition}}`;
}

export interface PartitionKeys {
  /** string (bitmap): bit i = done bit of offset base + i */
  readonly bits: string;
  /** hash: base, highest, epoch, parked, counters */
  readonly meta: string;
  /** hash: blocked lane id -> head */
  readonly lanes: string;
}

export function partitionKeys(ref: PartitionRef): PartitionKeys {
  const tag = partitionTag(ref);
  return { bits: `${tag}:bits`, meta: `${tag}:meta`, lanes: `${tag}:lanes` };
}

/** The park list of one lane: its parked records in offset order. */
export function parkKey(ref: PartitionRef, lane: string): string {
  return `${partitionTag(ref)}:park:${lane}`;
}

/**
 * The set of partitions a group tracks (`<topic>\n<partition>` members), read by the committer. It has a
 * hash tag of its own: it is written once per partition per process, never inside a partition's script.
 */
export function trackedPartitionsKey(group: string): string {
  return `{kl:${escapeName(group)}}:partitions`;
}
