import type { PartitionRef } from '../ports/partition';
import { deadLetterMalformed, writeAndMarkDone } from '../engine/dead-letters';
import { laneIdOf } from '../lanes/lane-id';
import { describeError } from '../lanes/outcome';
import type { EngineTask, PathParts, RunScope } from '../engine/run-scope';
import { topicPartitionKey, type KafkaRecord, type PartitionBatch, type RecordCoordinates } from '../event';
import { copyHeaderFormat, HEADER_PREFIX, readHandOffHeaders } from '../handoff/headers';
import type { CopyError, CopyFacts } from '../handoff/copies';
import type { HandOffItem } from '../ports/handoff';
import { retryTierOf } from '../options/names';

/**
 * A task of the retry function: a retry copy read from a tier (`copy`), or a lane's next head taken from
 * its park list after the lane was released (`drained`, run inline, in order).
 */
export interface RetryTask extends EngineTask {
  /** The partition of the origin: where the lane, its head and its park list live. */
  readonly originRef: PartitionRef;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: number };
  readonly from: 'copy' | 'drained';
  /** Not before this (epoch ms, G4). */
  readonly dueAtMs: number;
  readonly firstFailureAtMs: number;
  /** A copy as read: written back unchanged when it is due later than the invocation can wait. */
  readonly writeBack?: HandOffItem;
  /** A drained head's payload as its park list keeps it. */
  readonly payload?: string;
}

/** What a well-formed retry copy's headers say: its origin and the facts a copy of it is written again with. */
export interface CopyAsRead extends CopyFacts {
  readonly origin: { topic: string; partition: number; offset: number };
  readonly error: CopyError | undefined;
  readonly deferred: boolean;
}

/**
 * Reads a retry copy's framework headers; a string says what is wrong with them (the copy is dead-lettered
 * with it as the reason).
 */
export function copyFacts(record: KafkaRecord, tiers: readonly string[], group: string): CopyAsRead | string {
  const tier = retryTierOf(group, record.topic);
  if (tier === undefined || !tiers.includes(tier)) {
    return `unknown retry tier \`${tier ?? record.topic}\`: the configured tiers are ${tiers.map((t) => `\`${t}\``).join(', ')}`;
  }
  const h = readHandOffHeaders(record.headers);
  // A copy of the previous release carries a header per fact: what is wrong is named as it was written.
  const format = copyHeaderFormat(record.headers);
  if (format === undefined) return 'retry copy without a `lanes-copy` header';
  const legacy = format === 'legacy';
  const missing = (
    [
      ['originTopic', 'lanes-origin-topic', h.originTopic],
      ['originPartition', 'lanes-origin-partition', h.originPartition],
      ['originOffset', 'lanes-origin-offset', h.originOffset],
      ['attempt', 'lanes-attempt', h.attempt],
      ['dueAtMs', 'lanes-due-at', h.dueAtMs],
    ] as const
  ).filter(([, , value]) => value === undefined).map(([field, header]) => `\`${legacy ? header : field}\``);
  if (missing.length > 0) return legacy ? `retry copy without valid ${missing.join(', ')} header(s)` : `retry copy whose \`lanes-copy\` header has no valid ${missing.join(', ')}`;
  if (h.kind !== 'retry') return `retry copy whose ${legacy ? '`lanes-kind`' : '`lanes-copy` kind'} is not \`retry\``;
  if (h.attempt! < 1) return `retry copy with attempt ${h.attempt}`;
  return {
    origin: { topic: h.originTopic!, partition: h.originPartition!, offset: h.originOffset! },
    attempt: h.attempt!,
    dueAtMs: h.dueAtMs!,
    firstFailureAtMs: h.firstFailureAtMs ?? h.dueAtMs!,
    error: h.errorName === undefined && h.errorMessage === undefined ? undefined : { name: h.errorName ?? 'Error', message: h.errorMessage ?? '' },
    deferred: h.deferred === true,
  };
}

/** What admitting retry copies needs of a run scope. */
type AdmitScope = Pick<RunScope<RetryTask>, 'store' | 'write' | 'redeliver' | 'markDone' | 'unreportable' | 'count' | 'window' | 'guard'>;

/**
 * Admits one retry partition's batch of copies: each on its own offset (dedupe); a copy whose headers do not
 * say what it is (or whose lane cannot be found) is dead-lettered at once.
 */
export async function admitRetryBatch(scope: AdmitScope, parts: PathParts, batch: PartitionBatch): Promise<{ tasks: RetryTask[]; handOffs: Promise<unknown> }> {
  const { topic, partition, records, failures } = batch;
  const ref: PartitionRef = { group: parts.options.group, topic, partition };
  const partitionKey = topicPartitionKey(topic, partition);
  const unplaced = scope.guard(deadLetterMalformed(scope, parts, ref, failures.filter((failure) => failure.offset === undefined)), partitionKey);
  const placedFailures = failures.filter((failure) => failure.offset !== undefined);
  const offsets = [...new Set([...records.map((r) => r.offset), ...placedFailures.map((f) => f.offset!)])].sort((a, b) => a - b);
  const runnable = await admitOffsets(scope, parts, ref, offsets);
  if (runnable === undefined) return { tasks: [], handOffs: unplaced };

  const tasks: RetryTask[] = [];
  const malformed: HandOffItem[] = [];
  const seen = new Set<number>();
  for (const record of records) {
    if (!runnable.has(record.offset) || seen.has(record.offset)) continue;
    seen.add(record.offset);
    const task = copyTask(parts, ref, record);
    if ('kind' in task) malformed.push(task);
    else tasks.push(task);
  }
  const handOffs = scope.guard(Promise.all([
    unplaced,
    writeAndMarkDone(scope, ref, malformed, () => scope.count('deadLettered', malformed.length)),
    deadLetterMalformed(scope, parts, ref, placedFailures.filter((f) => runnable.has(f.offset!))),
  ]), partitionKey);
  return { tasks, handOffs };
}

/**
 * The copies' own offsets admitted (the retry topic's frontier and dedupe; lanes live on the origin partitions):
 * the offsets to run, or `undefined` when Redis could not be reached (the whole partition is redelivered).
 */
async function admitOffsets(scope: AdmitScope, parts: Pick<PathParts, 'logger'>, ref: PartitionRef, offsets: readonly number[]): Promise<Set<number> | undefined> {
  let result;
  try {
    result = await scope.store.admit(ref, offsets.map((offset) => ({ offset })));
  } catch (error) {
    parts.logger.error('cannot admit retry batch: Redis unreachable or refused; the whole partition will be redelivered', {
      partition: topicPartitionKey(ref.topic, ref.partition), error: describeError(error),
    });
    scope.redeliver(ref, offsets);
    return undefined;
  }
  if (result.window !== undefined) scope.window(ref, result.window);
  const runnable = new Set<number>();
  offsets.forEach((offset, i) => {
    const status = result.statuses[i];
    if (status === 'run') runnable.add(offset);
    else if (status === 'duplicate') scope.count('duplicates');
    else if (status === 'refused') {
      scope.count('refused');
      scope.redeliver(ref, [offset]);
    }
  });
  return runnable;
}

/** A copy as a task of the retry function, or its dead letter when its headers or its lane cannot be read. */
function copyTask(parts: PathParts, ref: PartitionRef, record: KafkaRecord): RetryTask | HandOffItem {
  const facts = copyFacts(record, parts.options.retry.tiers, parts.options.group);
  if (typeof facts === 'string') return malformedCopy(parts, record, facts);
  const originRef: PartitionRef = { group: parts.options.group, topic: facts.origin.topic, partition: facts.origin.partition };
  let lane: string | undefined;
  try {
    lane = laneIdOf(originalOf(record, facts.origin), parts.options);
  } catch (error) {
    return malformedCopy(parts, record, `keyOf threw: ${describeError(error).message}`);
  }
  return {
    partitionKey: topicPartitionKey(originRef.topic, originRef.partition),
    lane,
    offset: record.offset,
    ref,
    originRef,
    record,
    origin: facts.origin,
    attempt: facts.attempt,
    from: 'copy',
    dueAtMs: facts.dueAtMs,
    firstFailureAtMs: facts.firstFailureAtMs,
    writeBack: parts.copies.writtenBack({ record, origin: facts.origin, lane }, facts),
  };
}

function malformedCopy(parts: Pick<PathParts, 'copies' | 'logger'>, record: KafkaRecord, reason: string): HandOffItem {
  parts.logger.error('malformed retry copy: sent to the dead-letter topic', {
    partition: topicPartitionKey(record.topic, record.partition), offset: record.offset, reason,
  });
  const h = readHandOffHeaders(record.headers);
  const origin = h.originTopic !== undefined && h.originPartition !== undefined
    ? { topic: h.originTopic, partition: h.originPartition, offset: h.originOffset }
    : { topic: record.topic, partition: record.partition, offset: record.offset };
  return parts.copies.deadLetter({ record, origin, lane: h.lane }, h.attempt ?? 0, 'malformed', { name: 'MalformedRetryCopy', message: reason });
}

/** A retry copy seen as its original: origin coordinates, no framework headers (what `keyOf` saw first). */
export function originalOf(copy: KafkaRecord, origin: RecordCoordinates): KafkaRecord {
  return {
    ...copy,
    topic: origin.topic,
    partition: origin.partition,
    offset: origin.offset,
    headers: copy.headers.filter((header) => !header.name.startsWith(HEADER_PREFIX)),
  };
}
