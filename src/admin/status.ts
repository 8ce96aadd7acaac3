import type { Admin } from 'kafkajs';
import { entryHeadOffset, parseLaneHead, parseLanesEntry } from '../completion/lanes-entry';
import type { CompletionStore } from '../completion/store';
import type { PartitionRef } from '../ports/partition';
import { completionGroupId } from '../options/names';
import { fetchCommittedOffsets } from '../committer/offset-committer';
import { deadLetterTopic, retryTopic } from '../options';
import { renderLanes, type BlockedLane, type StatusLanes } from './lanes-table';

/**
 * `kafka-lanes status <group>`: where every partition of a group stands (docs/ARCHITECTURE.md, "Operating it"), read from
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
  /**
   * Records parked behind blocked heads (Redis is their index; the completion group never commits past them): the sum
   * of the lanes' `parked`. A head is not counted, even where Redis keeps its payload in its lane's park list.
   */
  readonly parked: number;
  /** Times the partition was recovered from Kafka after Redis lost its state (docs/durability.md). */
  readonly recoveries: number;
  /** When the last recovery began (epoch ms, Redis' clock); `undefined` when none was recorded. */
  readonly lastRecoveredAtMs: number | undefined;
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
  /** The blocked and held lanes, oldest first: present when `readStatus` was asked for them (`kafka-lanes status` is). */
  readonly lanes?: StatusLanes;
}

/**
 * Reads the status of every partition a group has completion state for, and of every partition of those
 * topics and of the group's retry and dead-letter topics.
 *
 * @example
 * const status = await readStatus({ group: 'orders-svc', admin, store });
 * process.stdout.write(renderStatus(status));
 */
export async function readStatus({
  group,
  admin,
  store,
  lanes,
}: {
  group: string;
  admin: Admin;
  /** The completion store on the group's Redis (its group state door is read too). */
  store: CompletionStore;
  /** List up to `limit` blocked and held lanes, the oldest first. */
  lanes?: { readonly limit: number };
}): Promise<GroupStatus> {
  const readAtMs = Date.now();
  const state = store.groupState(group);
  const refs = await state.partitions();
  const listed = await admin.listTopics();
  const retryPrefix = retryTopic(group, '');
  const dlq = deadLetterTopic(group);
  const roleOf = (topic: string): PartitionRole => (topic === dlq ? 'dead-letter' : topic.startsWith(retryPrefix) ? 'retry' : 'source');
  const existing = new Set(listed);
  const topics = new Set([...refs.map((ref) => ref.topic), ...listed.filter((topic) => topic === dlq || topic.startsWith(retryPrefix))]);
  const inKafka = [...topics].filter((topic) => existing.has(topic));

  const completionGroup = completionGroupId(group);
  const kafka = await readKafkaOffsets(admin, completionGroup, inKafka);
  const ids = new Set([...refs.map((ref) => `${ref.topic}\n${ref.partition}`), ...kafka.logs.keys()]);
  const partitions: PartitionStatus[] = [];
  for (const id of ids) {
    const cut = id.lastIndexOf('\n');
    const ref = { group, topic: id.slice(0, cut), partition: Number(id.slice(cut + 1)) };
    partitions.push(await partitionStatus(store, ref, roleOf(ref.topic), { log: kafka.logs.get(id), committed: kafka.committed.get(id) }));
  }
  const order: Record<PartitionRole, number> = { source: 0, retry: 1, 'dead-letter': 2 };
  partitions.sort((a, b) => order[a.role] - order[b.role] || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  const blocked = partitions.filter((p) => p.blockedLanes > 0);
  const page = lanes === undefined ? undefined : await readBlockedLanes({ group, store, query: { limit: lanes.limit }, partitions: blocked });
  return {
    ...(page === undefined ? {} : { lanes: { total: page.total, lanes: page.lanes.map((lane) => ({ ...lane, ageMs: Math.max(0, readAtMs - lane.sinceMs) })) } }),
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

/** A partition's log offsets, and where the completion group committed it. */
interface KafkaOffsets {
  readonly log: { readonly low: number; readonly high: number } | undefined;
  readonly committed: number | undefined;
}

/** The log offsets of the topics' partitions and the completion group's committed offsets, keyed `<topic>\n<partition>`. */
async function readKafkaOffsets(admin: Admin, completionGroup: string, topics: readonly string[]): Promise<{ logs: Map<string, { low: number; high: number }>; committed: Map<string, number | undefined> }> {
  const logs = new Map<string, { low: number; high: number }>();
  for (const topic of topics) {
    for (const entry of await admin.fetchTopicOffsets(topic)) {
      logs.set(`${topic}\n${entry.partition}`, { low: Number(entry.low), high: Number(entry.high) });
    }
  }
  const committed = new Map<string, number | undefined>();
  for (const entry of await fetchCommittedOffsets(admin, completionGroup, topics)) committed.set(`${entry.topic}\n${entry.partition}`, entry.offset);
  return { logs, committed };
}

/** One partition's status: what Redis holds of it, beside its log and its committed offset. */
async function partitionStatus(store: CompletionStore, ref: PartitionRef, role: PartitionRole, { log, committed }: KafkaOffsets): Promise<PartitionStatus> {
  const redisPart = await readPartition(store, ref);
  const consumedTo = committed ?? redisPart.frontier ?? log?.low;
  return {
    topic: ref.topic,
    partition: ref.partition,
    role,
    committed,
    ...redisPart,
    endOffset: log?.high,
    startOffset: log?.low,
    lag: log === undefined || consumedTo === undefined ? undefined : Math.max(0, log.high - consumedTo),
  };
}

export type RedisPartition = Pick<PartitionStatus, 'frontier' | 'highest' | 'window' | 'blockedLanes' | 'heldLanes' | 'parked' | 'recoveries' | 'lastRecoveredAtMs' | 'recovering'>;

/** What Redis holds for one partition: frontier, window, blocked and held lanes, parked records. */
export async function readPartition(store: CompletionStore, ref: PartitionRef): Promise<RedisPartition> {
  const state = store.groupState(ref.group);
  // The frontier script with `trim` off only reads; one atomic reading of base, highest and the bits.
  const [reading, heads, facts] = await Promise.all([store.frontier(ref, { trim: false }), state.laneEntries(ref), state.recoveryFacts(ref)]);
  let held = 0;
  for (const [lane, entry] of Object.entries(heads)) {
    try {
      if (parseLaneHead(entry, `lane ${lane}`, lane).state === 'held') held += 1;
    } catch {
      // A head in a shape this version does not know (a newer writer) still blocks its lane.
    }
  }
  // The sum of the lanes' counts, so the partition row, its lanes' rows and the dashboard agree (see `parkedBehind`).
  const parked = await state.parkedBehind(ref, Object.entries(heads).map(([lane, entry]) => ({ lane, headOffset: entryHeadOffset(entry) })));
  return {
    frontier: reading?.frontier,
    highest: reading?.highest,
    window: reading === undefined ? undefined : reading.highest + 1 - reading.frontier,
    blockedLanes: Object.keys(heads).length,
    heldLanes: held,
    parked: parked.reduce((sum, count) => sum + count, 0),
    recoveries: facts.recoveries,
    lastRecoveredAtMs: facts.recoveredAtMs,
    recovering: facts.fenceUntilMs > Date.now(),
  };
}


export type LaneSort = 'age' | 'attempt' | 'due' | 'offset' | 'partition' | 'key' | 'state';

export interface LanesQuery {
  /** `age` (the default) lists the oldest first. */
  readonly sort?: LaneSort;
  readonly descending?: boolean;
  readonly state?: 'retrying' | 'held';
  readonly topic?: string;
  readonly partition?: number;
  /** Index of the first lane of the page, in the sorted list. */
  readonly offset?: number;
  readonly limit?: number;
}

export interface LanesPage {
  /** Lanes matching the filter, over every page. */
  readonly total: number;
  readonly offset: number;
  /** The page, each with the records parked behind its head (the head itself not counted). */
  readonly lanes: ReadonlyArray<BlockedLane & { readonly parked: number }>;
}

/**
 * The key of a lane in words: its text where the bytes are printable UTF-8, else what kind of lane it is.
 *
 * @example
 * describeLane('Y3VzdC00Mg=='); // 'cust-42'
 * describeLane('*'); // '(partition)'
 */
export function describeLane(lane: string): string {
  if (lane === '*') return '(partition)';
  if (lane === '~') return '(null key)';
  if (lane.startsWith('#')) return '(long key, hashed)';
  const bytes = Buffer.from(lane, 'base64');
  const text = bytes.toString('utf8');
  // A round trip that changes the bytes means invalid UTF-8; control characters would garble a table.
  if (Buffer.from(text, 'utf8').equals(bytes) && !/[\p{Cc}\p{Cf}]/u.test(text) && text !== '') return text;
  return `(binary, ${bytes.length} bytes)`;
}

const LANE_ORDER: Record<LaneSort, (a: BlockedLane, b: BlockedLane) => number> = {
  age: (a, b) => a.sinceMs - b.sinceMs,
  attempt: (a, b) => a.attempt - b.attempt,
  due: (a, b) => a.dueAtMs - b.dueAtMs,
  offset: (a, b) => a.headOffset - b.headOffset,
  partition: (a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition),
  key: (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  state: (a, b) => (a.state < b.state ? -1 : a.state > b.state ? 1 : 0),
};

/**
 * One page of a group's blocked and held lanes, sorted (the oldest first by default). Every head is read (one
 * HGETALL per partition), the parked counts only for the page, so tens of thousands of lanes stay cheap.
 *
 * @example
 * const page = await readBlockedLanes({ group: 'orders-svc', store, query: { state: 'held', limit: 50 } });
 */
export async function readBlockedLanes({
  group,
  store,
  query = {},
  partitions,
}: {
  group: string;
  store: Pick<CompletionStore, 'groupState'>;
  query?: LanesQuery;
  /** The partitions to look in (e.g. those of a recent `readStatus`); default: found in Redis, as `status` finds them. */
  partitions?: ReadonlyArray<Pick<PartitionRef, 'topic' | 'partition'>>;
}): Promise<LanesPage> {
  const state = store.groupState(group);
  const known = partitions === undefined ? await state.partitions() : partitions.map((p) => ({ group, topic: p.topic, partition: p.partition }));
  const refs = known.filter(
    (ref) => (query.topic === undefined || ref.topic === query.topic) && (query.partition === undefined || ref.partition === query.partition),
  );
  const all: BlockedLane[] = [];
  const heads = await Promise.all(refs.map((ref) => state.laneEntries(ref)));
  for (const [index, ref] of refs.entries()) {
    for (const [lane, entry] of Object.entries(heads[index] ?? {})) {
      let head;
      try {
        head = parseLanesEntry(entry, `lane ${lane}`);
      } catch {
        continue;
      }
      if (query.state !== undefined && head.state !== query.state) continue;
      all.push({
        topic: ref.topic, partition: ref.partition, lane, key: describeLane(lane), headOffset: head.offset, attempt: head.attempt,
        state: head.state, sinceMs: head.sinceMs, dueAtMs: head.dueAtMs, reason: head.reason,
      });
    }
  }
  const order = LANE_ORDER[query.sort ?? 'age'];
  const sign = query.descending === true ? -1 : 1;
  // Ties fall back to the lane's place, so a page boundary never shows one lane twice or skips one.
  all.sort((a, b) => sign * order(a, b) || LANE_ORDER.partition(a, b) || a.headOffset - b.headOffset || (a.lane < b.lane ? -1 : 1));
  const offset = query.offset ?? 0;
  const page = all.slice(offset, offset + (query.limit ?? 50));
  const lanes = await Promise.all(page.map(async (lane) => {
    const [parked = 0] = await state.parkedBehind({ group, topic: lane.topic, partition: lane.partition }, [lane]);
    return { ...lane, parked };
  }));
  return { total: all.length, offset, lanes };
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

/** ` (recovering now, last at <time>)`: what is known of a partition's recoveries besides their count. */
function recoveryNote(p: PartitionStatus): string {
  const notes = [
    ...(p.recovering ? ['recovering now'] : []),
    ...(p.lastRecoveredAtMs === undefined ? [] : [`last at ${new Date(p.lastRecoveredAtMs).toISOString()}`]),
  ];
  return notes.length === 0 ? '' : ` (${notes.join(', ')})`;
}

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
  if (status.lanes !== undefined) lines.push(...renderLanes(status.lanes));
  const recovered = status.partitions.filter((p) => p.recoveries > 0 || p.recovering);
  if (recovered.length > 0) {
    lines.push(
      `recovered from Kafka after Redis lost state: ${recovered.map((p) => `${p.topic}-${p.partition} ${p.recoveries}x${recoveryNote(p)}`).join(', ')}`,
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
