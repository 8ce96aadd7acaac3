import { isObject } from '../describe';
import { describeValue } from '../errors';
import { isCanonicalBase64 } from './bytes';
import { EventDecodeError } from './errors';
import { isDecodeFailure } from './offsets';
import { parseTopicPartitionKey, type TopicPartition } from './topic-partition';
import { buildRecord, checkRecord, decodeRecord, expected, failureOf, hasSchemaMetadata, readableOffset, type JsonObject, type RecordList, type RecordPrep } from './decode-record';
import type { DecodeFailure, DecodedKafkaEvent, KafkaEventSource, KafkaRecord, PartitionBatch } from './types';

export type { RecordPrep } from './decode-record';

// AWS documents `SelfManagedKafka`; `aws:SelfManagedKafka` appears in community samples of the same event, so it
// is taken as an alias rather than sending a whole batch back. An absent `eventSource` is rejected: every AWS
// example and type has it. A Map, not an object, so that `toString` or `__proto__` never match.
const EVENT_SOURCES = new Map<string, KafkaEventSource>([
  ['aws:kafka', 'aws:kafka'],
  ['SelfManagedKafka', 'SelfManagedKafka'],
  ['aws:SelfManagedKafka', 'SelfManagedKafka'],
]);

/**
 * Decodes a Kafka trigger event (MSK or self-managed) as AWS sends it.
 *
 * A malformed record never throws: it becomes a `DecodeFailure` of its partition and the rest of the batch decodes.
 * Records of a partition come back sorted by offset, whatever order they arrived in. `bootstrapServers` may be
 * absent or `null` (AWS' own Powertools parser allows it) and then decodes to `[]`; an absent or `null` `headers`
 * decodes to no headers.
 *
 * @throws EventDecodeError if the event as a whole is malformed: not an object, an unknown `eventSource`, no
 * `records` object, a `records` key that is not `<topic>-<partition>` or a `records` value that is not an array.
 * @example
 * const event = decodeKafkaEvent(lambdaEvent);
 * for (const { topic, partition, records, failures } of event.partitions) {
 *   for (const record of records) console.log(topic, partition, record.offset, record.value?.toString('utf8'));
 *   for (const failure of failures) console.warn(failure.message);
 * }
 */
export function decodeKafkaEvent(event: unknown): DecodedKafkaEvent {
  return decodeEventWith(event, decodePartition);
}

/**
 * `decodeKafkaEvent` with each partition's records decoded when first needed: a `LazyPartitionBatch` per partition.
 * The event as a whole is checked at once (and throws as `decodeKafkaEvent` does); a record is decoded, into the same
 * record or failure, when its part of the batch is reached (`decodeAt`) or when `records` or `failures` is first read.
 * The source path admits a batch in chunks: its first records start while the rest is still undecoded.
 *
 * @example
 * const event = decodeKafkaEventLazily(lambdaEvent);
 * const batch = event.partitions[0] as LazyPartitionBatch;
 * batch.ascendingOffsets(); // the offsets as delivered when strictly ascending (every batch AWS sends)
 * batch.decodeAt(0); // the first record, or its failure
 *
 * `prepare`: what turns a record object as delivered into the one to read, before it is decoded (the handler's reading
 * of a trigger's schema registry integration, registry/esm-records.ts); the same object when there is nothing to do.
 */
export function decodeKafkaEventLazily(event: unknown, prepare?: RecordPrep): DecodedKafkaEvent {
  return decodeEventWith(event, (key, list) => new LazyPartitionBatch(key, list, prepare));
}

/** Turns a record object as delivered into the one to decode. */

function decodeEventWith(event: unknown, partitionOf: (key: string, list: unknown) => PartitionBatch): DecodedKafkaEvent {
  if (!isObject(event)) {
    throw new EventDecodeError(`Expected the Kafka event to be an object, got ${describeValue(event)}`);
  }
  const source = typeof event.eventSource === 'string' ? EVENT_SOURCES.get(event.eventSource) : undefined;
  if (source === undefined) {
    throw new EventDecodeError(expected('eventSource', '`aws:kafka` or `SelfManagedKafka`', event.eventSource));
  }
  const { eventSourceArn, bootstrapServers, records } = event;
  if (eventSourceArn !== undefined && eventSourceArn !== null && typeof eventSourceArn !== 'string') {
    throw new EventDecodeError(expected('eventSourceArn', 'a string', eventSourceArn));
  }
  if (bootstrapServers !== undefined && bootstrapServers !== null && typeof bootstrapServers !== 'string') {
    throw new EventDecodeError(expected('bootstrapServers', 'a comma-separated string', bootstrapServers));
  }
  if (!isObject(records)) {
    throw new EventDecodeError(expected('records', 'an object keyed `<topic>-<partition>`', records));
  }
  const partitions = Object.entries(records).map(([key, list]) => partitionOf(key, list));
  return {
    source,
    ...(typeof eventSourceArn === 'string' ? { eventSourceArn } : {}),
    bootstrapServers: (bootstrapServers ?? '').split(',').map((server) => server.trim()).filter((server) => server !== ''),
    partitions,
  };
}

/** The topic and partition of a `records` key, and its list; throws `EventDecodeError` when either is malformed. */
function partitionList(key: string, list: unknown): { where: TopicPartition; list: readonly unknown[] } {
  const where = parseTopicPartitionKey(key);
  if (where === undefined) {
    throw new EventDecodeError(`Expected each key of \`records\` to be \`<topic>-<partition>\`, got ${describeValue(key)}`);
  }
  if (!Array.isArray(list)) {
    throw new EventDecodeError(expected(`records[${JSON.stringify(key)}]`, 'an array of records', list));
  }
  return { where, list };
}

function decodePartition(key: string, list: unknown): PartitionBatch {
  const partition = partitionList(key, list);
  return { ...partition.where, ...decodeList(partition.where, key, partition.list, undefined) };
}

/** Decodes every item of a partition's list (`decoded`: items decoded already, kept as they are). */
function decodeList(
  where: TopicPartition,
  key: string,
  list: readonly unknown[],
  decoded: ReadonlyArray<KafkaRecord | DecodeFailure | undefined> | undefined,
): { records: KafkaRecord[]; failures: DecodeFailure[] } {
  const records: KafkaRecord[] = [];
  const failures: DecodeFailure[] = [];
  let sorted = true;
  const at: RecordList = { topic: where.topic, partition: where.partition, key };
  for (let index = 0; index < list.length; index += 1) {
    const item = decoded?.[index] ?? decodeRecord(list[index], at, index);
    if ('reason' in item) {
      failures.push(item);
    } else {
      if (sorted && records.length > 0 && records[records.length - 1]!.offset > item.offset) sorted = false;
      records.push(item);
    }
  }
  // AWS sends a partition's records in offset order, but the bitmap and the lanes depend on it: do not trust it.
  if (!sorted) records.sort((a, b) => a.offset - b.offset);
  return { records, failures };
}

/**
 * One partition's batch, its records decoded when first needed. `records` and `failures` decode whatever is left
 * (once), so a reader that needs the whole batch sees exactly what `decodeKafkaEvent` gives; `decodeAt` decodes one
 * item as delivered, into the object `records` or `failures` will hold.
 */
export class LazyPartitionBatch implements PartitionBatch {
  readonly topic: string;
  readonly partition: number;
  readonly #key: string;
  /** Where its items came from, as decode-record.ts names a record's place. */
  readonly #at: RecordList;
  readonly #list: readonly unknown[];
  readonly #decoded: Array<KafkaRecord | DecodeFailure | undefined>;
  readonly #prepare: RecordPrep | undefined;
  /** Items as `prepare` made them, each made once: every reader of an item (check, record, key, park) sees the same. */
  readonly #prepared: unknown[] | undefined;
  #all: { records: KafkaRecord[]; failures: DecodeFailure[] } | undefined = undefined;
  #ascending: number[] | null | undefined = undefined;

  constructor(key: string, list: unknown, prepare?: RecordPrep) {
    const { where, list: items } = partitionList(key, list);
    this.#prepare = prepare;
    this.topic = where.topic;
    this.partition = where.partition;
    this.#key = key;
    this.#at = { topic: where.topic, partition: where.partition, key };
    this.#list = items;
    this.#decoded = new Array<KafkaRecord | DecodeFailure | undefined>(items.length);
    this.#prepared = prepare === undefined ? undefined : new Array<unknown>(items.length);
  }

  /** The `index`-th item to read: as delivered, or as `prepare` made it (once). */
  #itemAt(index: number): unknown {
    const raw = this.#list[index];
    if (this.#prepared === undefined || this.#prepare === undefined || !isObject(raw)) return raw;
    return (this.#prepared[index] ??= this.#prepare(raw));
  }

  /** How many records were delivered (records and failures). */
  get size(): number {
    return this.#list.length;
  }

  get records(): KafkaRecord[] {
    return this.#decodeAll().records;
  }

  get failures(): DecodeFailure[] {
    return this.#decodeAll().failures;
  }

  /**
   * The offsets as delivered, when every item is an object with a readable offset and they strictly ascend (every
   * batch AWS sends): then item `i` decodes to the record or the failure of the `i`-th offset, and the batch has no
   * duplicates. `undefined` otherwise: read `records` and `failures`.
   */
  ascendingOffsets(): readonly number[] | undefined {
    if (this.#ascending === undefined) this.#ascending = ascending(this.#list) ?? null;
    return this.#ascending ?? undefined;
  }

  /** The `index`-th item as delivered, decoded: a record or a failure, never a throw. */
  decodeAt(index: number): KafkaRecord | DecodeFailure {
    const decoded = this.#decoded[index];
    if (decoded !== undefined) return decoded;
    const item = decodeRecord(this.#itemAt(index), this.#at, index);
    this.#decoded[index] = item;
    return item;
  }

  /**
   * The failure of the `index`-th item as delivered, or `undefined` when it is a record: what `decodeAt` would give,
   * without making the record. With `recordAt`, the way to hold a batch's records only while each is used: a record
   * checked at admission is made when it runs, and nothing keeps it once it is done.
   */
  failureAt(index: number): DecodeFailure | undefined {
    const decoded = this.#decoded[index];
    if (decoded !== undefined) return isDecodeFailure(decoded) ? decoded : undefined;
    const raw = this.#itemAt(index);
    try {
      checkRecord(raw, this.#at);
      return undefined;
    } catch (error) {
      const failure = failureOf(error, raw, this.#at, index);
      this.#decoded[index] = failure;
      return failure;
    }
  }

  /**
   * The `index`-th item, made into a record each time it is asked for (not kept), without checking it again: call it
   * only for an item `failureAt` found to be a record (it throws for one it found to be a failure).
   */
  recordAt(index: number): KafkaRecord {
    const failure = this.#decoded[index];
    if (failure !== undefined && isDecodeFailure(failure)) throw new EventDecodeError(failure.message);
    const raw = this.#itemAt(index) as JsonObject;
    return buildRecord(raw, hasSchemaMetadata(raw));
  }

  /**
   * The key of the `index`-th item as AWS sent it, base64, when decoding and encoding it again gives the same text
   * (its lane id, without making its bytes); `null` for a null key; `undefined` when it is not such a text.
   */
  keyTextAt(index: number): string | null | undefined {
    const key = (this.#itemAt(index) as JsonObject | undefined)?.key;
    if (key === undefined || key === null) return null;
    return typeof key === 'string' && isCanonicalBase64(key) ? key : undefined;
  }

  /**
   * The `index`-th item as AWS sent it, or as `prepare` made it (what a park list keeps: a record read again is left as
   * it is, so it parks as it reads).
   */
  rawAt(index: number): unknown {
    return this.#itemAt(index);
  }

  #decodeAll(): { records: KafkaRecord[]; failures: DecodeFailure[] } {
    if (this.#all !== undefined) return this.#all;
    const items = this.#prepared === undefined ? this.#list : this.#list.map((_, index) => this.#itemAt(index));
    return (this.#all = decodeList(this, this.#key, items, this.#decoded));
  }
}

/** How many records a batch delivered (records and failures), without decoding a lazy one. */
export function batchSize(batch: PartitionBatch): number {
  return batch instanceof LazyPartitionBatch ? batch.size : batch.records.length + batch.failures.length;
}

/** The offsets of a list of records when each is readable and they strictly ascend; otherwise `undefined`. */
function ascending(list: readonly unknown[]): number[] | undefined {
  const offsets = new Array<number>(list.length);
  let previous = -1;
  for (let i = 0; i < list.length; i += 1) {
    const offset = readableOffset(list[i]);
    if (offset === undefined || offset <= previous) return undefined;
    offsets[i] = offset;
    previous = offset;
  }
  return offsets;
}

/** The first thing found wrong in a record; thrown and caught inside this module only. */
