import type { PartitionRef } from '../ports/partition';
import { deadLetterMalformed, writeAndMarkDone } from '../engine/dead-letters';
import { laneIdOf } from '../lanes/lane-id';
import { describeError } from '../lanes/outcome';
import type { EngineTask, PathScope } from '../engine/run-scope';
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

/**
 * Admits one retry partition's batch of copies: each on its own offset (dedupe); a copy whose headers do not
 * say what it is (or whose lane cannot be found) is dead-lettered at once.
 */
export async function admitRetryBatch(scope: PathScope<RetryTask>, batch: PartitionBatch): Promise<{ tasks: RetryTask[]; handOffs: Promise<unknown> }> {
  const { topic, partition, records, failures } = batch;
  const ref: PartitionRef = { group: scope.options.group, topic, partition };
  const partitionKey = topicPartitionKey(topic, partition);
  const unplaced = scope.guard(deadLetterMalformed(scope, ref, failures.filter((failure) => failure.offset === undefined)), partitionKey);
  const placedFailures = failures.filter((failure) => failure.offset !== undefined);
  const offsets = [...new Set([...records.map((r) => r.offset), ...placedFailures.map((f) => f.offset!)])].sort((a, b) => a - b);

  let result;
  try {
    // The copies' own offsets: the retry topic's frontier and dedupe. Lanes live on the origin partitions.
    result = await scope.store.admit(ref, offsets.map((offset) => ({ offset })));
  } catch (error) {
    scope.logger.error('cannot admit retry batch: Redis unreachable or refused; the whole partition will be redelivered', {
      partition: partitionKey, error: describeError(error),
    });
    scope.redeliver(ref, offsets);
    return { tasks: [], handOffs: unplaced };
  }
  if (result.window !== undefined) scope.window(ref, result.window);
  const status = new Map(offsets.map((offset, i) => [offset, result.statuses[i]]));
  for (const offset of offsets) {
    const s = status.get(offset);
    if (s === 'duplicate') scope.count('duplicates');
    else if (s === 'refused') {
      scope.count('refused');
      scope.redeliver(ref, [offset]);
    }
  }
  const runnable = (offset: number): boolean => status.get(offset) === 'run';

  const tasks: RetryTask[] = [];
  const malformed: HandOffItem[] = [];
  const seen = new Set<number>();
  for (const record of records) {
    if (!runnable(record.offset) || seen.has(record.offset)) continue;
    seen.add(record.offset);
    const facts = copyFacts(record, scope.options.retry.tiers, scope.options.group);
    if (typeof facts === 'string') {
      malformed.push(malformedCopy(scope, record, facts));
      continue;
    }
    const originRef: PartitionRef = { group: scope.options.group, topic: facts.origin.topic, partition: facts.origin.partition };
    let lane: string | undefined;
    try {
      lane = laneIdOf(originalOf(record, facts.origin), scope.options);
    } catch (error) {
      malformed.push(malformedCopy(scope, record, `keyOf threw: ${describeError(error).message}`));
      continue;
    }
    tasks.push({
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
      writeBack: scope.copies.writtenBack({ record, origin: facts.origin, lane }, facts),
    });
  }
  const handOffs = scope.guard(Promise.all([
    unplaced,
    writeAndMarkDone(scope, ref, malformed, () => scope.count('deadLettered', malformed.length)),
    deadLetterMalformed(scope, ref, placedFailures.filter((f) => runnable(f.offset!))),
  ]), partitionKey);
  return { tasks, handOffs };
}

function malformedCopy(scope: PathScope<RetryTask>, record: KafkaRecord, reason: string): HandOffItem {
  scope.logger.error('malformed retry copy: sent to the dead-letter topic', {
    partition: topicPartitionKey(record.topic, record.partition), offset: record.offset, reason,
  });
  const h = readHandOffHeaders(record.headers);
  const origin = h.originTopic !== undefined && h.originPartition !== undefined
    ? { topic: h.originTopic, partition: h.originPartition, offset: h.originOffset }
    : { topic: record.topic, partition: record.partition, offset: record.offset };
  return scope.copies.deadLetter({ record, origin, lane: h.lane }, h.attempt ?? 0, 'malformed', { name: 'MalformedRetryCopy', message: reason });
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
