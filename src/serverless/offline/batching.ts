import { encodeKafkaEvent } from '../../event/encode';
import type { AwsKafkaEvent, AwsKafkaRecord } from '../../event/types';
import { topicPartitionKey } from '../../event/topic-partition';

/** How the emulated event source names its cluster in the event. */
export type EventSourceSpec = { readonly source: 'aws:kafka'; readonly eventSourceArn: string } | { readonly source: 'SelfManagedKafka' };

export interface BatchLimits {
  /** At most this many records per invocation (Lambda: 1-10,000, default 100). */
  readonly batchSize: number;
  /** At most this many bytes of event JSON per invocation (Lambda: 6 MB). */
  readonly maxPayloadBytes: number;
}

/**
 * Cuts one partition's records into the events of successive invocations, in offset order: each holds at most
 * `batchSize` records and at most `maxPayloadBytes` of JSON (what Lambda would receive). A single record
 * larger than the payload limit travels alone (Lambda could not deliver it at all; the emulator says so in
 * its log rather than stall the partition). Pure.
 *
 * @example
 * const events = cutBatches(records, { source: 'SelfManagedKafka' }, ['127.0.0.1:9092'], { batchSize: 100, maxPayloadBytes: 6 * 1024 * 1024 });
 * events.map((e) => e.records.length);
 */
export function cutBatches(
  records: readonly AwsKafkaRecord[],
  spec: EventSourceSpec,
  bootstrapServers: readonly string[],
  limits: BatchLimits,
): Array<{ event: AwsKafkaEvent; records: AwsKafkaRecord[]; bytes: number }> {
  if (records.length === 0) return [];
  const first = records[0]!;
  const envelope = encodeKafkaEvent({ ...spec, bootstrapServers, records: [] });
  const key = topicPartitionKey(first.topic, first.partition);
  // {"...":...,"records":{}} -> {"...":...,"records":{"<key>":[]}} + one comma between two records.
  const emptyBytes = byteLength(JSON.stringify(envelope)) + byteLength(JSON.stringify(key)) + 3;
  const out: Array<{ event: AwsKafkaEvent; records: AwsKafkaRecord[]; bytes: number }> = [];
  let current: AwsKafkaRecord[] = [];
  let bytes = emptyBytes;
  const flush = (): void => {
    if (current.length === 0) return;
    out.push({ event: { ...envelope, records: { [key]: current } } as AwsKafkaEvent, records: current, bytes });
    current = [];
    bytes = emptyBytes;
  };
  for (const record of records) {
    const size = byteLength(JSON.stringify(record));
    if (current.length > 0 && (current.length >= limits.batchSize || bytes + 1 + size > limits.maxPayloadBytes)) flush();
    bytes += size + (current.length > 0 ? 1 : 0);
    current.push(record);
  }
  flush();
  return out;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The outcome of one invocation for one partition's batch, as the event source mapping reads it. */
export type BatchOutcome =
  /** Every record is done: commit after the last one. */
  | { readonly kind: 'success' }
  /** Records from `offset` on must be sent again; the ones below it are done. */
  | { readonly kind: 'retry-from'; readonly offset: number; readonly reason: string };

/**
 * What the event source mapping does with an invocation's result (Lambda developer guide, Kafka error
 * handling): an error retries the whole batch; with `ReportBatchItemFailures`, a response naming failed
 * records retries from the lowest one (the records below it are committed), an empty list or `null` is a
 * success, and a response that cannot be read fails the whole batch. Without `ReportBatchItemFailures` the
 * response is ignored. Pure.
 *
 * @example
 * readOutcome({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 7 } }] }, undefined, batch, true);
 * // { kind: 'retry-from', offset: 7, ... }
 */
export function readOutcome(
  response: unknown,
  error: unknown,
  batch: readonly AwsKafkaRecord[],
  reportBatchItemFailures: boolean,
): BatchOutcome {
  const first = batch[0];
  if (first === undefined) return { kind: 'success' };
  if (error !== undefined) return { kind: 'retry-from', offset: first.offset, reason: `invocation failed: ${describeError(error)}` };
  if (!reportBatchItemFailures || response === null || response === undefined) return { kind: 'success' };
  if (typeof response !== 'object' || !('batchItemFailures' in response)) return { kind: 'success' };
  const failures = (response as { batchItemFailures: unknown }).batchItemFailures;
  if (failures === null || failures === undefined) return { kind: 'success' };
  if (!Array.isArray(failures)) return { kind: 'retry-from', offset: first.offset, reason: 'unreadable partial batch response' };
  if (failures.length === 0) return { kind: 'success' };
  const key = topicPartitionKey(first.topic, first.partition);
  const offsets = new Set(batch.map((record) => record.offset));
  let lowest: number | undefined;
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    if (id?.partition !== key || typeof id.offset !== 'number' || !offsets.has(id.offset)) {
      return { kind: 'retry-from', offset: first.offset, reason: `partial batch response names a record not in the batch: ${JSON.stringify(failure)}` };
    }
    lowest = lowest === undefined ? id.offset : Math.min(lowest, id.offset);
  }
  return { kind: 'retry-from', offset: lowest!, reason: `${failures.length} record(s) reported as failed` };
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
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}
