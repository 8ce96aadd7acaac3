import { encodeKafkaEvent } from '../../event/encode';
import { exponentialDelay } from '../../options/backoff';
import type { AwsKafkaEvent, AwsKafkaRecord } from '../../event/types';
import { topicPartitionKey } from '../../event/topic-partition';

/** How the emulated event source names its cluster in the event. */
export type EventSourceSpec = { readonly source: 'aws:kafka'; readonly eventSourceArn: string } | { readonly source: 'SelfManagedKafka' };

export interface BatchLimits {
  /** At most this many records per invocation, all partitions together (Lambda: 1-10,000, default 100). */
  readonly batchSize: number;
  /** At most this many bytes of event JSON per invocation (Lambda: 6 MB). */
  readonly maxPayloadBytes: number;
}

/** One invocation's event and what it took from each queue. */
export interface NextEvent {
  readonly event: AwsKafkaEvent;
  /** Per queue given, in the same order: the records of that queue the event holds (a prefix; may be empty). */
  readonly parts: ReadonlyArray<readonly AwsKafkaRecord[]>;
  /** Bytes of the event's JSON, counted exactly. */
  readonly bytes: number;
}

/**
 * The event of the next invocation, taken from the heads of partition queues (each queue: one partition's
 * records in offset order): records of the first queue first, then of the next ones while the event holds
 * fewer than `batchSize` records and at most `maxPayloadBytes` of JSON (what Lambda would receive). Each
 * queue contributes a prefix, so a partition's records stay in order. Given one queue, the event holds one
 * partition. A first record larger than the payload limit travels alone (Lambda could not deliver it at all;
 * the emulator says so in its log rather than stall the partition). `undefined` when every queue is empty. Pure.
 *
 * @example
 * const next = nextEvent([ordersP0, ordersP1], { source: 'SelfManagedKafka' }, ['127.0.0.1:9092'], { batchSize: 100, maxPayloadBytes: 6 * 1024 * 1024 });
 * Object.keys(next.event.records); // ['orders-0', 'orders-1'] when both fit
 */
export function nextEvent(
  queues: ReadonlyArray<readonly AwsKafkaRecord[]>,
  spec: EventSourceSpec,
  bootstrapServers: readonly string[],
  limits: BatchLimits,
): NextEvent | undefined {
  const envelope = encodeKafkaEvent({ ...spec, bootstrapServers, records: [] });
  // {"...":...,"records":{}}: every partition adds "<key>":[...] and a comma before all but the first.
  let bytes = byteLength(JSON.stringify(envelope));
  let count = 0;
  const records: Record<string, AwsKafkaRecord[]> = {};
  const parts: AwsKafkaRecord[][] = [];
  for (const queue of queues) {
    const part: AwsKafkaRecord[] = [];
    parts.push(part);
    const first = queue[0];
    if (first === undefined || count >= limits.batchSize) continue;
    const key = topicPartitionKey(first.topic, first.partition);
    let partBytes = byteLength(JSON.stringify(key)) + 3 + (count > 0 ? 1 : 0);
    for (const record of queue) {
      if (count + part.length >= limits.batchSize) break;
      const size = byteLength(JSON.stringify(record)) + (part.length > 0 ? 1 : 0);
      const alone = count === 0 && part.length === 0;
      if (!alone && bytes + partBytes + size > limits.maxPayloadBytes) break;
      partBytes += size;
      part.push(record);
    }
    if (part.length === 0) continue;
    records[key] = part;
    bytes += partBytes;
    count += part.length;
  }
  if (count === 0) return undefined;
  return { event: { ...envelope, records } as AwsKafkaEvent, parts, bytes };
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The outcome of one invocation for one partition's records in it, as the event source mapping reads it. */
export type BatchOutcome =
  /** Every record is done: commit after the last one. */
  | { readonly kind: 'success' }
  /** Records from `offset` on must be sent again; the ones below it are done. */
  | { readonly kind: 'retry-from'; readonly offset: number; readonly reason: string };

/**
 * What the event source mapping does with an invocation's result, per partition of the event (Lambda developer
 * guide, Kafka error handling): an error retries every record; with `ReportBatchItemFailures`, a response
 * naming failed records retries each named partition from its lowest failed record (the records below it and
 * the partitions it does not name are committed), an empty list or `null` is a success, and a response that
 * cannot be read, or names a record the event does not hold, fails every record. Without
 * `ReportBatchItemFailures` the response is ignored. `parts`: each partition's records in the event, one
 * outcome per part, in the same order. Pure.
 *
 * @example
 * readOutcomes({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 7 } }] }, undefined, [ordersP0, ordersP1], true);
 * // [{ kind: 'retry-from', offset: 7, ... }, { kind: 'success' }]
 */
export function readOutcomes(
  response: unknown,
  error: unknown,
  parts: ReadonlyArray<readonly AwsKafkaRecord[]>,
  reportBatchItemFailures: boolean,
): BatchOutcome[] {
  const all = (reason: string): BatchOutcome[] =>
    parts.map((part) => (part[0] === undefined ? { kind: 'success' } : { kind: 'retry-from', offset: part[0].offset, reason }));
  const success = (): BatchOutcome[] => parts.map(() => ({ kind: 'success' }));
  if (error !== undefined) return all(`invocation failed: ${describeError(error)}`);
  if (!reportBatchItemFailures || response === null || response === undefined) return success();
  if (typeof response !== 'object' || !('batchItemFailures' in response)) return success();
  const failures = (response as { batchItemFailures: unknown }).batchItemFailures;
  if (failures === null || failures === undefined) return success();
  if (!Array.isArray(failures)) return all('unreadable partial batch response');
  const held = new Map<string, Set<number>>();
  for (const part of parts) {
    if (part[0] !== undefined) held.set(topicPartitionKey(part[0].topic, part[0].partition), new Set(part.map((record) => record.offset)));
  }
  const lowest = new Map<string, number>();
  const named = new Map<string, number>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    const offsets = typeof id?.partition === 'string' ? held.get(id.partition) : undefined;
    if (offsets === undefined || typeof id?.offset !== 'number' || !offsets.has(id.offset)) {
      return all(`partial batch response names a record not in the batch: ${JSON.stringify(failure)}`);
    }
    const key = id.partition as string;
    lowest.set(key, Math.min(lowest.get(key) ?? id.offset, id.offset));
    named.set(key, (named.get(key) ?? 0) + 1);
  }
  return parts.map((part) => {
    const key = part[0] === undefined ? undefined : topicPartitionKey(part[0].topic, part[0].partition);
    const offset = key === undefined ? undefined : lowest.get(key);
    if (key === undefined || offset === undefined) return { kind: 'success' };
    return { kind: 'retry-from', offset, reason: `${named.get(key)} record(s) reported as failed` };
  });
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (typeof error === 'object' && error !== null && 'errorMessage' in error) return String((error as { errorMessage: unknown }).errorMessage);
  return String(error);
}

/**
 * Delay before sending a failed batch again: `initialMs` doubled per attempt, at most `maxMs`.
 *
 * @example
 * retryDelayMs(1, 1_000, 30_000); // 1000
 * retryDelayMs(4, 1_000, 30_000); // 8000
 */
export function retryDelayMs(attempt: number, initialMs: number, maxMs: number): number {
  return exponentialDelay({ initialMs, multiplier: 2, maxMs }, Math.max(attempt - 1, 0));
}
