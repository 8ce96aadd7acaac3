import { escapeName, groupTag, partitionTagOf } from '../options/names';
import type { OutputId } from '../ports/effects';
import type { PartitionRef } from '../ports/partition';

export { escapeName };

/*
 * Every Redis key name of a partition is built here, from the tags of `src/options/names.ts`.
 *
 * All keys of one (group, topic, partition) share the hash tag `{kl:<group>:<topic>:<partition>}` so every
 * script touches a single slot and runs unchanged on Redis Cluster. Group and topic are percent-escaped:
 * a `{`, `}` or `:` in a group name (Kafka allows almost anything there) cannot end the tag early or make
 * two different partitions share one tag.
 */
/** Tags of the refs seen so far: the tasks of a partition share one ref, and its tag is built once. */
const tags = new WeakMap<PartitionRef, string>();

/** The hash tag shared by every key of one partition. */
export function partitionTag(ref: PartitionRef): string {
  let tag = tags.get(ref);
  if (tag === undefined) tags.set(ref, (tag = partitionTagOf(ref.group, ref.topic, ref.partition)));
  return tag;
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

/** The offsets of one step block: the step results of a partition's records live in a hash per block of offsets. */
export const STEPS_PER_BLOCK = 32;

/**
 * hash: offset -> the record's step results, for the block of `STEPS_PER_BLOCK` offsets holding `at` (the step results
 * of `ctx.step`, under the record's first origin's tag; `save-steps-1.lua`). The records running at once share a few
 * blocks, so a record costs Redis a field, not a key of its own with a time to live.
 */
export function stepsBlockKey(at: { readonly ref: PartitionRef; readonly offset: number }): string {
  return `${partitionTag(at.ref)}:stepsblock:${stepsBlockOf(at.offset)}`;
}

/** The first offset of the step block holding `offset`: records with the same one share a block. */
export function stepsBlockOf(offset: number): number {
  return offset - (offset % STEPS_PER_BLOCK);
}

/**
 * hash: step name -> serialized result, of one record, as scripts version 11 stored them: still read (`load-steps-1.lua`),
 * so a record in flight across the upgrade keeps its completed steps; never written.
 */
export function legacyStepsKey(at: { readonly ref: PartitionRef; readonly offset: number }): string {
  return `${partitionTag(at.ref)}:steps:${at.offset}`;
}

/** The park list of one lane: its parked records in offset order. */
export function parkKey(ref: PartitionRef, lane: string): string {
  return `${partitionTag(ref)}:park:${lane}`;
}

/** string: the highest offset of a partition with stored step results (`save-steps-1.lua`). */
export function steppedKey(ref: PartitionRef): string {
  return `${partitionTag(ref)}:stepped`;
}

/** string: "attempt|copy|state" of an unordered record in the retry path, by origin offset (`claim-copy-1.lua`). */
export function copyKey(ref: PartitionRef, offset: number): string {
  return `${partitionTag(ref)}:copy:${offset}`;
}

/**
 * string: the record (its first origin) that took an output of another stage (`dedupeOutputs`), under a tag of the
 * output's own origin partition (`outputClaimTag`), so the repeats of one output meet in one slot whichever
 * partition of the topic they landed in, and the claims of one origin partition can go in one call.
 */
export function outputClaimKey(group: string, id: OutputId, tag: string = outputClaimTag(group, id)): string {
  return `${tag}:${id.origin.offset}:${id.index}`;
}

/** The hash tag of the claims of the outputs of one origin partition of one upstream stage, read by `group`. */
export function outputClaimTag(group: string, id: OutputId): string {
  return `{kl:${escapeName(group)}:out:${escapeName(id.group)}:${escapeName(id.origin.topic)}:${id.origin.partition}}`;
}

/**
 * The set of partitions a group tracks (`<topic>\n<partition>` members), read by the committer. It has a
 * hash tag of its own: it is written once per partition per process, never inside a partition's script.
 */
export function trackedPartitionsKey(group: string): string {
  return `${groupTag(group)}:partitions`;
}

/*
 * The committer's two keys carry the group's own hash tag `{kl:<group>}` (the one of the tracked-partitions set), so
 * on Redis Cluster they live in one slot with it.
 */
/** string: the token of the committer run holding the group's lease (`SET NX PX`), if any. */
export function committerLeaseKey(group: string): string {
  return `${groupTag(group)}:committer`;
}

/** hash: `<topic>\n<partition>` -> what the previous committer run saw (see `encodeReading`). */
export function committerReadingsKey(group: string): string {
  return `${groupTag(group)}:committer:readings`;
}
