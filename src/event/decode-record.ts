import { isObject, thrownText } from '../describe';
import { describeValue } from '../errors';
import { isBase64, isSignedByte } from './bytes';
import { isOffset, isPartition } from './topic-partition';
import type { AwsKafkaRecord, DecodeFailure, KafkaHeader, KafkaRecord, SchemaMetadata, TimestampType } from './types';

export type JsonObject = Record<string, unknown>;

/** A record's offset as a failure of it would carry: its own `offset` when valid. */
export function readableOffset(raw: unknown): number | undefined {
  try {
    return isObject(raw) && isOffset(raw.offset) ? raw.offset : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One record of a Kafka trigger event, read and checked as AWS sends it (decode.ts reads the event and its partitions):
 * a malformed record becomes a `DecodeFailure` naming the field, what was expected and what came.
 */

const TIMESTAMP_TYPES: ReadonlySet<unknown> = new Set<TimestampType>(['CREATE_TIME', 'LOG_APPEND_TIME']);

export function expected(field: string, what: string, got: unknown): string {
  return `Expected \`${field}\` to be ${what}, got ${describeValue(got)}`;
}

export type RecordPrep = (raw: Readonly<Record<string, unknown>>) => Readonly<Record<string, unknown>>;

class Problem {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {}
}

/** The partition list a record came in: the event's key (`orders-3`) and the topic and partition it names. */
export interface RecordList {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
}

/** The `index`-th item of `list`, read: a record, or the failure naming what is wrong with it. */
export function decodeRecord(raw: unknown, list: RecordList, index: number): KafkaRecord | DecodeFailure {
  try {
    return readRecord(raw, list);
  } catch (error) {
    return failureOf(error, raw, list, index);
  }
}

/** The failure of a record that could not be read: what `checkRecord` or `readRecord` threw. */
export function failureOf(error: unknown, raw: unknown, list: RecordList, index: number): DecodeFailure {
  const { topic, partition, key } = list;
  // Anything else thrown while reading one record (a bug of ours met by odd input) must not fail the batch
  // for ever: the record becomes a failure like any malformed one and is dead-lettered with what was thrown.
  const problem = error instanceof Problem ? error : new Problem('record', `cannot be read: ${thrownText(error, 400)}`);
  const offset = readableOffset(raw);
  const named = `record ${index} of \`${key}\` (offset ${offset ?? 'unknown'})`;
  return {
    topic,
    partition,
    offset,
    index,
    field: problem.field,
    reason: problem.reason,
    message: `Cannot decode ${named}: ${problem.reason}`,
    raw,
  };
}

function readRecord(raw: unknown, list: RecordList): KafkaRecord {
  return buildRecord(raw as JsonObject, checkRecord(raw, list));
}

/**
 * Throws the first thing wrong with a record (a `Problem`); allocates nothing for a record that is right. Returns
 * whether it has schema metadata.
 */
export function checkRecord(raw: unknown, list: RecordList): boolean {
  const { topic: keyTopic, partition: keyPartition, key } = list;
  if (!isObject(raw)) throw new Problem('record', expected('record', 'an object', raw));
  const { topic, partition, offset, timestamp, timestampType } = raw;
  if (typeof topic !== 'string') throw new Problem('topic', expected('topic', 'a string', topic));
  if (topic !== keyTopic) {
    throw new Problem('topic', expected('topic', `\`${keyTopic}\` as in its key \`${key}\``, topic));
  }
  if (!isPartition(partition)) throw new Problem('partition', expected('partition', 'a non-negative int32', partition));
  if (partition !== keyPartition) {
    throw new Problem('partition', expected('partition', `${keyPartition} as in its key \`${key}\``, partition));
  }
  if (!isOffset(offset)) throw new Problem('offset', expected('offset', 'a non-negative safe integer', offset));
  if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp)) {
    throw new Problem('timestamp', expected('timestamp', 'a safe integer (epoch ms)', timestamp));
  }
  if (!TIMESTAMP_TYPES.has(timestampType)) {
    throw new Problem('timestampType', expected('timestampType', '`CREATE_TIME` or `LOG_APPEND_TIME`', timestampType));
  }
  const keyMetadata = checkSchemaMetadata(raw, 'keySchemaMetadata');
  const valueMetadata = checkSchemaMetadata(raw, 'valueSchemaMetadata');
  checkBytes(raw, 'key');
  checkBytes(raw, 'value');
  checkHeaders(raw.headers);
  return keyMetadata || valueMetadata;
}

/** The record of a raw record `checkRecord` found right (`metadata`: with schema metadata). */
export function buildRecord(raw: JsonObject, metadata: boolean): KafkaRecord {
  const record: KafkaRecord = {
    topic: raw.topic as string,
    partition: raw.partition as number,
    offset: raw.offset as number,
    timestamp: raw.timestamp as number,
    timestampType: raw.timestampType as TimestampType,
    key: bytesOf(raw.key),
    value: bytesOf(raw.value),
    headers: headersOf(raw.headers),
    // Validated field by field; the extra fields AWS may add are kept untouched.
    raw: raw as unknown as AwsKafkaRecord,
  };
  // Without the two temporary objects of a conditional spread per record: most records have no metadata.
  if (!metadata) return record;
  const keySchemaMetadata = schemaMetadataOf(raw.keySchemaMetadata);
  const valueSchemaMetadata = schemaMetadataOf(raw.valueSchemaMetadata);
  return {
    ...record,
    ...(keySchemaMetadata === undefined ? {} : { keySchemaMetadata }),
    ...(valueSchemaMetadata === undefined ? {} : { valueSchemaMetadata }),
  };
}

function checkBytes(raw: JsonObject, field: 'key' | 'value'): void {
  const text = raw[field];
  if (text === undefined || text === null) return;
  if (typeof text !== 'string' || !isBase64(text)) throw new Problem(field, expected(field, 'a base64 string or null', text));
}

/** The bytes of a key or value `checkBytes` found right. */
function bytesOf(text: unknown): Buffer | null {
  return typeof text === 'string' ? Buffer.from(text, 'base64') : null;
}

/** The headers of most records: none. One array for them all (a record's headers are read-only). */
const NO_HEADERS: readonly KafkaHeader[] = Object.freeze([]);

function checkHeaders(headers: unknown): void {
  if (headers === undefined || headers === null) return;
  if (!Array.isArray(headers)) throw new Problem('headers', expected('headers', 'an array', headers));
  for (let index = 0; index < headers.length; index += 1) {
    const header: unknown = headers[index];
    const field = `headers[${index}]`;
    const entries = isObject(header) ? Object.entries(header) : [];
    const [entry] = entries;
    if (entry === undefined || entries.length !== 1) {
      throw new Problem(field, expected(field, 'an object with exactly one entry', header));
    }
    const [name, bytes] = entry;
    const path = `${field}[${JSON.stringify(name)}]`;
    if (!Array.isArray(bytes)) throw new Problem(path, expected(path, 'an array of signed bytes (-128..127)', bytes));
    const bad = bytes.findIndex((byte) => !isSignedByte(byte));
    if (bad !== -1) throw new Problem(`${path}[${bad}]`, expected(`${path}[${bad}]`, 'a signed byte (-128..127)', bytes[bad]));
  }
}

/** The headers `checkHeaders` found right. */
function headersOf(headers: unknown): readonly KafkaHeader[] {
  if (!Array.isArray(headers) || headers.length === 0) return NO_HEADERS;
  return headers.map((header: Record<string, number[]>) => {
    const [name, bytes] = Object.entries(header)[0]!;
    // Two's complement: Buffer.from keeps the low 8 bits, so -61 becomes 0xc3.
    return { name, value: Buffer.from(bytes) };
  });
}

export function hasSchemaMetadata(raw: JsonObject): boolean {
  return (raw.keySchemaMetadata !== undefined && raw.keySchemaMetadata !== null) || (raw.valueSchemaMetadata !== undefined && raw.valueSchemaMetadata !== null);
}

/** Throws when a record's schema metadata is malformed; whether it has any. */
function checkSchemaMetadata(raw: JsonObject, field: 'keySchemaMetadata' | 'valueSchemaMetadata'): boolean {
  const metadata = raw[field];
  if (metadata === undefined || metadata === null) return false;
  if (!isObject(metadata) || typeof metadata.dataFormat !== 'string') {
    throw new Problem(field, expected(field, 'an object with a string `dataFormat`', metadata));
  }
  const { schemaId } = metadata;
  if (schemaId !== undefined && schemaId !== null && typeof schemaId !== 'string') {
    throw new Problem(`${field}.schemaId`, expected(`${field}.schemaId`, 'a string', schemaId));
  }
  return true;
}

/** The schema metadata `checkSchemaMetadata` found right. */
function schemaMetadataOf(metadata: unknown): SchemaMetadata | undefined {
  if (metadata === undefined || metadata === null) return undefined;
  const { dataFormat, schemaId } = metadata as { dataFormat: string; schemaId?: string | null };
  return schemaId === undefined || schemaId === null ? { dataFormat } : { dataFormat, schemaId };
}
