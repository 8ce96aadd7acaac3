import type { Admin } from 'kafkajs';
import { parseLaneHead } from '../completion/args';
import { partitionKeys, trackedPartitionsKey } from '../completion/keys';
import type { RedisClient } from '../completion/scripts';
import { CompletionStore } from '../completion/store';
import type { PartitionRef } from '../completion/types';
import { completionGroupId } from '../committer/keys';
import { fetchCommittedOffsets } from '../committer/offset-committer';
import { deadLetterTopic, retryTopic } from '../options';
import { partitionKeysPattern, partitionOfKey, scanKeys } from './redis-scan';

/**
 * `kafka-lanes status <group>`: where every partition of a group stands (DESIGN.md section 9), read from
 * Kafka (end offsets, what the completion group `<group>.lanes` has committed) and Redis (frontier, window,
 * blocked lanes, parked records). Reading changes nothing.
 */

export type PartitionRole = 'source' | 'retry' | 'dead-letter';

export interface PartitionStatus {
  readonly topic: string;
  readonly partition: number;
  readonly role: PartitionRole;
  /** What `<group>.lanes` has committed: the next offset to read; `undefined` when nothing is committed. */
  readonly committed: number | undefined;
  /** The lowest offset whose done bit is not set; `undefined` when Redis holds nothing for the partition. */
  readonly frontier: number | undefined;
  /** The highest delivered offset, as Redis knows it. */
  readonly highest: number | undefined;
  /** Offsets delivered at or above the frontier (`highest + 1 - frontier`): the bitmap's live span. */
  readonly window: number | undefined;
  /** The log end offset; `undefined` when the topic no longer exists in Kafka. */
  readonly endOffset: number | undefined;
  /** The log start offset. */
  readonly startOffset: number | undefined;
  /** Records not yet committed: end offset minus the committed offset (or the frontier, or the start offset). */
  readonly lag: number | undefined;
  /** Lanes whose head is in the retry path (`retrying`) or waiting for an operator (`held`). */
  readonly blockedLanes: number;
  readonly heldLanes: number;
  /** Records parked behind blocked heads (Redis is their index; the completion group never commits past them). */
  readonly parked: number;
  /** Times the partition was recovered from Kafka after Redis lost its state (README, "Durability"). */
  readonly recoveries: number;
  /** A recovery is rebuilding the partition now: its records are refused until it ends. */
  readonly recovering: boolean;
}

export interface GroupStatus {
  readonly group: string;
  /** `<group>.lanes`. */
  readonly completionGroup: string;
  /** When it was read (epoch ms). */
  readonly readAtMs: number;
  /** Source partitions first, then retry tiers, then the dead-letter topic; by topic and partition. */
  readonly partitions: readonly PartitionStatus[];
  /** Copies waiting in the retry tiers: the retry topics' lag, summed. */
  readonly retryDepth: number;
  /** Records in the dead-letter topic (end minus start offset, summed). */
  readonly deadLetters: number;
  /** Topics with completion state in Redis that no longer exist in Kafka (see `kafka-lanes reset`). */
  readonly missingTopics: readonly string[];
}

/**
 * Reads the status of every partition a group has completion state for, and of every partition of those
 * topics and of the group's retry and dead-letter topics.
 *
 * @example
 * const status = await readStatus({ group: 'orders-svc', admin, redis });
 * process.stdout.write(renderStatus(status));
 */
export async function readStatus({ group, admin, redis }: { group: string; admin: Admin; redis: RedisClient }): Promise<GroupStatus> {
  const readAtMs = Date.now();
  const refs = await findPartitions(redis, group);
  const listed = await admin.listTopics();
  const retryPrefix = retryTopic(group, '');
  const dlq = deadLetterTopic(group);
  const roleOf = (topic: string): PartitionRole => (topic === dlq ? 'dead-letter' : topic.startsWith(retryPrefix) ? 'retry' : 'source');
  const existing = new Set(listed);
  const topics = new Set([...refs.map((ref) => ref.topic), ...listed.filter((topic) => topic === dlq || topic.startsWith(retryPrefix))]);
  const inKafka = [...topics].filter((topic) => existing.has(topic));

  const offsets = new Map<string, { low: number; high: number }>();
  for (const topic of inKafka) {
    for (const entry of await admin.fetchTopicOffsets(topic)) {
      offsets.set(`${topic}\n${entry.partition}`, { low: Number(entry.low), high: Number(entry.high) });
    }
  }
  const committed = new Map<string, number | undefined>();
  const completionGroup = completionGroupId(group);
  for (const entry of await fetchCommittedOffsets(admin, completionGroup, inKafka)) committed.set(`${entry.topic}\n${entry.partition}`, entry.offset);

  const ids = new Set([...refs.map((ref) => `${ref.topic}\n${ref.partition}`), ...offsets.keys()]);
  const store = new CompletionStore(redis);
  const partitions: PartitionStatus[] = [];
  for (const id of ids) {
    const cut = id.lastIndexOf('\n');
    const ref = { group, topic: id.slice(0, cut), partition: Number(id.slice(cut + 1)) };
    const redisPart = await readPartition(store, redis, ref);
    const log = offsets.get(id);
    const done = committed.get(id);
    const consumedTo = done ?? redisPart.frontier ?? log?.low;
    partitions.push({
      topic: ref.topic,
      partition: ref.partition,
      role: roleOf(ref.topic),
      committed: done,
      ...redisPart,
      endOffset: log?.high,
      startOffset: log?.low,
      lag: log === undefined || consumedTo === undefined ? undefined : Math.max(0, log.high - consumedTo),
    });
  }
  const order: Record<PartitionRole, number> = { source: 0, retry: 1, 'dead-letter': 2 };
  partitions.sort((a, b) => order[a.role] - order[b.role] || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  return {
    group,
    completionGroup,
    readAtMs,
    partitions,
    retryDepth: partitions.filter((p) => p.role === 'retry').reduce((sum, p) => sum + (p.lag ?? 0), 0),
    deadLetters: partitions
      .filter((p) => p.role === 'dead-letter')
      .reduce((sum, p) => sum + (p.endOffset === undefined || p.startOffset === undefined ? 0 : p.endOffset - p.startOffset), 0),
    missingTopics: [...topics].filter((topic) => !existing.has(topic)).sort(),
  };
}

/** The partitions a group has completion state for: its tracked set and a SCAN of its keys (on every master). */
export async function findPartitions(redis: RedisClient, group: string): Promise<PartitionRef[]> {
  const found = new Map<string, PartitionRef>();
  for (const member of await redis.smembers(trackedPartitionsKey(group))) {
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

export type RedisPartition = Pick<PartitionStatus, 'frontier' | 'highest' | 'window' | 'blockedLanes' | 'heldLanes' | 'parked' | 'recoveries' | 'recovering'>;

/** What Redis holds for one partition: frontier, window, blocked and held lanes, parked records. */
export async function readPartition(store: CompletionStore, redis: RedisClient, ref: PartitionRef): Promise<RedisPartition> {
  const keys = partitionKeys(ref);
  // The frontier script with `trim` off only reads; one atomic reading of base, highest and the bits.
  const [reading, heads, parked] = await Promise.all([
    store.frontier(ref, { trim: false }),
    redis.hgetall(keys.lanes),
    redis.hmget(keys.meta, 'parked', 'recoveries', 'recovering'),
  ]);
  let held = 0;
  for (const [lane, entry] of Object.entries(heads)) {
    try {
      if (parseLaneHead(entry, `lane ${lane}`, lane).state === 'held') held += 1;
    } catch {
      // A head in a shape this version does not know (a newer writer) still blocks its lane.
    }
  }
  return {
    frontier: reading?.frontier,
    highest: reading?.highest,
    window: reading === undefined ? undefined : reading.highest + 1 - reading.frontier,
    blockedLanes: Object.keys(heads).length,
    heldLanes: held,
    parked: Number(parked[0] ?? 0),
    recoveries: Number(parked[1] ?? 0),
    recovering: Number(parked[2] ?? 0) > Date.now(),
  };
}

const COLUMNS: ReadonlyArray<[string, (p: PartitionStatus) => string]> = [
  ['TOPIC', (p) => p.topic],
  ['PART', (p) => String(p.partition)],
  ['ROLE', (p) => p.role],
  ['COMMITTED', (p) => show(p.committed)],
  ['FRONTIER', (p) => show(p.frontier)],
  ['WINDOW', (p) => show(p.window)],
  ['END', (p) => show(p.endOffset)],
  ['LAG', (p) => show(p.lag)],
  ['BLOCKED', (p) => String(p.blockedLanes)],
  ['HELD', (p) => String(p.heldLanes)],
  ['PARKED', (p) => String(p.parked)],
];

function show(value: number | undefined): string {
  return value === undefined ? '-' : String(value);
}

/**
 * The status as a table a person reads, one row per partition, then the totals.
 *
 * @example
 * renderStatus(status);
 * // group orders-svc (committed offsets of orders-svc.lanes)
 * // TOPIC   PART  ROLE    COMMITTED  FRONTIER  WINDOW  END  LAG  BLOCKED  HELD  PARKED
 * // orders  0     source  42         42        3       45   3    1        0     2
 */
export function renderStatus(status: GroupStatus): string {
  const rows = [COLUMNS.map(([title]) => title), ...status.partitions.map((p) => COLUMNS.map(([, cell]) => cell(p)))];
  const widths = COLUMNS.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  const lines = [`group ${status.group} (committed offsets of ${status.completionGroup}), read ${new Date(status.readAtMs).toISOString()}`];
  if (status.partitions.length === 0) lines.push('no partitions: nothing in Redis for this group and no retry or dead-letter topics in Kafka');
  else lines.push(...rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()));
  const totals = (pick: (p: PartitionStatus) => number): number => status.partitions.reduce((sum, p) => sum + pick(p), 0);
  lines.push(
    `blocked lanes ${totals((p) => p.blockedLanes)} (held ${totals((p) => p.heldLanes)}), parked ${totals((p) => p.parked)}, ` +
      `retry depth ${status.retryDepth}, dead letters ${status.deadLetters}`,
  );
  const recovered = status.partitions.filter((p) => p.recoveries > 0 || p.recovering);
  if (recovered.length > 0) {
    lines.push(
      `recovered from Kafka after Redis lost state: ${recovered.map((p) => `${p.topic}-${p.partition} ${p.recoveries}x${p.recovering ? ' (recovering now)' : ''}`).join(', ')}`,
    );
  }
  if (status.missingTopics.length > 0) {
    lines.push(
      `topics with completion state but missing from Kafka: ${status.missingTopics.join(', ')} ` +
        '(if one is created again, run `kafka-lanes reset` for it first)',
    );
  }
  return `${lines.join('\n')}\n`;
}
