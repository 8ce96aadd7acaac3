/**
 * The framework headers of retry and dead-letter copies (docs/ARCHITECTURE.md, "Copies and their headers"), and the kafkajs `Message` of a copy.
 * Pure: no I/O, no clock.
 */
import type { IHeaders, Message } from 'kafkajs';
import { describeValue } from '../errors';
import type { KafkaRecord } from '../event';
import { ESM_DECODED_HEADER } from '../registry/types';
import type { HandOffHeaders, HeaderList } from './types';
import type { HandOffItem, HandOffKind, HandOffOrigin } from '../ports/handoff';

/** Every framework header starts with this; a user's header must not (copies drop it, see `handOffMessage`). */
export const HEADER_PREFIX = 'lanes-';

/** The framework header names, one prefix. Values are UTF-8 text. */
export const HandOffHeader = {
  /**
   * The facts of a retry or dead-letter copy, one JSON object whose fields are those `readHandOffHeaders` gives
   * (`CopyFacts` below): origin, lane, kind, attempt, due time, first failure, error, reason, deferred, and on a dead
   * letter the broker would not take whole, what it leaves out. One header, not one per fact: the producer encodes
   * every header in a buffer of its own, and the eleven headers copies carried before took a copy's encoding from
   * about 9 to about 30 µs.
   */
  Copy: 'lanes-copy',
  /**
   * `<topic>/<partition>/<offset>` where a record replayed from the dead-letter topic was first read (its identity,
   * `ctx.idempotencyKey`). Unlike the other framework headers, copies keep it.
   */
  FirstOrigin: 'lanes-first-origin',
  /**
   * On a dead letter written back to its origin topic (`kafka-lanes dlq replay`): `<dlq>/<partition>/<offset>`, where
   * it was read in the dead-letter topic. Only a replayed record carries it.
   */
  ReplayOf: 'lanes-replay-of',
  /**
   * On a record whose trigger decoded its key or value to JSON through a schema registry (`eventRecordFormat: JSON`):
   * the parts that hold that JSON text instead of the producer's bytes, `value` or `key,value`. Copies keep it, so a retry reads the JSON again; `dlq replay` does not
   * write such a record back to its origin topic, whose readers expect the producer's format.
   */
  EsmDecoded: ESM_DECODED_HEADER,
} as const;
export type HandOffHeader = (typeof HandOffHeader)[keyof typeof HandOffHeader];

/**
 * The headers copies carried before `lanes-copy`, one per fact; numbers as decimal text. Still read: a copy written by
 * the previous release may wait in a retry topic, and dead letters stay for as long as the topic keeps them.
 */
export const LegacyHandOffHeader = {
  OriginTopic: 'lanes-origin-topic',
  OriginPartition: 'lanes-origin-partition',
  OriginOffset: 'lanes-origin-offset',
  OriginTimestamp: 'lanes-origin-timestamp',
  Lane: 'lanes-lane',
  Kind: 'lanes-kind',
  Attempt: 'lanes-attempt',
  DueAt: 'lanes-due-at',
  FirstFailureAt: 'lanes-first-failure-at',
  ErrorClass: 'lanes-error-class',
  ErrorMessage: 'lanes-error-message',
  DeadLetterReason: 'lanes-dead-letter-reason',
  Deferred: 'lanes-deferred',
  LeftOut: 'lanes-left-out',
  OriginalValueSize: 'lanes-original-value-size',
} as const;

/** Longest error message a copy carries, in UTF-16 code units (JavaScript string length), marker included. */
export const MAX_ERROR_MESSAGE_LENGTH = 1_000;
/** Longest error class name a copy carries. */
export const MAX_ERROR_NAME_LENGTH = 200;
/** Longest dead-letter reason a copy carries. */
export const MAX_REASON_LENGTH = 1_000;

const KINDS: ReadonlySet<string> = new Set<HandOffKind>(['retry', 'dead-letter']);

/**
 * Cuts `text` to at most `max` characters, ending in a marker that says it was cut and how long it was. A
 * surrogate pair is never split.
 *
 * @example
 * truncateText('x'.repeat(5000), 1000); // 'xxx…x… [truncated from 5000 chars]', 1000 chars long
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = `… [truncated from ${text.length} chars]`;
  let cut = Math.max(0, max - marker.length);
  const last = text.charCodeAt(cut - 1);
  if (cut > 0 && last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return text.slice(0, cut) + marker;
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function check(ok: boolean, field: string, what: string, got: unknown): void {
  if (!ok) throw new RangeError(`Expected \`${field}\` to be ${what}, got ${describeValue(got)}`);
}

function checkItem(item: HandOffItem): void {
  check(typeof item.topic === 'string' && item.topic !== '', 'topic', 'a non-empty string', item.topic);
  check(KINDS.has(item.kind), 'kind', '`retry` or `dead-letter`', item.kind);
  check(
    typeof item.origin.topic === 'string' && item.origin.topic !== '',
    'origin.topic',
    'a non-empty string',
    item.origin.topic,
  );
  check(isNonNegativeInteger(item.origin.partition), 'origin.partition', 'a non-negative integer', item.origin.partition);
  check(
    isNonNegativeInteger(item.origin.offset) || (item.origin.offset === undefined && item.kind === 'dead-letter'),
    'origin.offset',
    'a non-negative integer (absent only on a dead letter)',
    item.origin.offset,
  );
  check(isNonNegativeInteger(item.attempt), 'attempt', 'a non-negative integer', item.attempt);
  check(isNonNegativeInteger(item.dueAtMs), 'dueAtMs', 'a non-negative integer (epoch ms)', item.dueAtMs);
  check(
    isNonNegativeInteger(item.firstFailureAtMs),
    'firstFailureAtMs',
    'a non-negative integer (epoch ms)',
    item.firstFailureAtMs,
  );
}

/** What a dead letter the broker would not take whole leaves out (see `deadLetterWithout`). */
export interface LeftOut {
  /** `value`, or `value,key,headers`. */
  readonly leftOut: string;
  /** The byte length of the value left out (0 for a null value). */
  readonly originalValueSize: number;
}

/**
 * The kafkajs message of a retry or dead-letter copy: the original key, value and headers, plus the framework's
 * facts in one header, `lanes-copy` (JSON, see `HandOffHeader.Copy`). Framework headers the record already carries
 * (it is itself a copy) are replaced, never duplicated: every header named `lanes-*` but `lanes-first-origin` is
 * dropped first.
 *
 * No partition is set: the producer's partitioner picks one from the key, so every copy of one key lands in one
 * partition of the target topic. A record with a null key stays keyless.
 *
 * kafkajs takes headers as an object (name -> value or values) and writes them name by name, so: every value of a
 * name is kept, in order; names keep the order they first appear in, except that names which are array indices
 * (`"0"`, `"42"`) come first, a rule of JavaScript property order; headers whose names interleave (`a, b, a`)
 * are written grouped (`a, a, b`).
 *
 * @throws RangeError if a field of `item` is not what its type promises (an empty topic, a negative attempt, ...).
 * @example
 * const message = handOffMessage({
 *   record,
 *   origin: originOf(record),
 *   kind: 'retry',
 *   topic: 'orders.retry.5s',
 *   attempt: 2,
 *   dueAtMs: Date.now() + 5_000,
 *   firstFailureAtMs: Date.now(),
 *   error: { name: err.name, message: err.message },
 * });
 * await producer.send({ topic: 'orders.retry.5s', messages: [message], acks: -1 });
 * // message.headers['lanes-copy']: '{"kind":"retry","originTopic":"orders","originPartition":3,"originOffset":41,...}'
 */
export function handOffMessage(item: HandOffItem, leftOut?: LeftOut): Message {
  checkItem(item);
  const { record, origin } = item;
  // A copy of a copy keeps the first record's timestamp; a record without headers is no copy (most are not).
  const originTimestamp = (record.headers.length === 0 ? undefined : readHandOffHeaders(record.headers).originTimestamp) ?? record.timestamp;
  // Written in this order, fields without a value left out (JSON.stringify drops `undefined`).
  const facts: CopyFacts = {
    kind: item.kind,
    originTopic: origin.topic,
    originPartition: origin.partition,
    originOffset: origin.offset,
    originTimestamp: isNonNegativeInteger(originTimestamp) ? originTimestamp : undefined,
    lane: item.lane,
    attempt: item.attempt,
    dueAtMs: item.dueAtMs,
    firstFailureAtMs: item.firstFailureAtMs,
    errorName: item.error === undefined ? undefined : truncateText(String(item.error.name), MAX_ERROR_NAME_LENGTH),
    errorMessage: item.error === undefined ? undefined : truncateText(String(item.error.message), MAX_ERROR_MESSAGE_LENGTH),
    reason: item.reason === undefined ? undefined : truncateText(item.reason, MAX_REASON_LENGTH),
    deferred: item.deferred === true ? true : undefined,
    leftOut: leftOut?.leftOut,
    originalValueSize: leftOut?.originalValueSize,
  };
  const copy = copyHeaderValue(facts);
  // Most records carry no header: an ordinary object of one name, which kafkajs reads faster than one without prototype.
  if (record.headers.length === 0) return { key: record.key, value: record.value, headers: { [HandOffHeader.Copy]: copy } };
  const headers = keptHeaders(record.headers);
  headers[HandOffHeader.Copy] = copy;
  return { key: record.key, value: record.value, headers };
}

/** A record's headers a copy keeps (all but the framework's, `lanes-first-origin` and `lanes-esm-decoded` excepted), as kafkajs takes them. */
function keptHeaders(list: KafkaRecord['headers']): IHeaders {
  // A null prototype: a header named `__proto__` or `constructor` is an ordinary name here.
  const headers = Object.create(null) as IHeaders;
  for (const { name, value } of list) {
    if (name.startsWith(HEADER_PREFIX) && name !== HandOffHeader.FirstOrigin && name !== HandOffHeader.EsmDecoded) continue;
    const existing = headers[name];
    if (existing === undefined) headers[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else headers[name] = [existing, value];
  }
  return headers;
}

/**
 * The longest `lanes-copy` value in UTF-8 bytes: the error message, class and reason at 3 bytes per character, plus
 * the rest of the facts (the origin topic, at most 249 characters, the lane id, at most 129, numbers and field names).
 * The retry and dead-letter topics are sized for it (`COPY_HEADROOM_BYTES`).
 */
export const MAX_COPY_HEADER_BYTES = 3 * (MAX_ERROR_MESSAGE_LENGTH + MAX_ERROR_NAME_LENGTH + MAX_REASON_LENGTH) + 1_024;

/**
 * The facts as JSON, within `MAX_COPY_HEADER_BYTES`. JSON writes a control character or a lone surrogate as `\uXXXX`,
 * 6 bytes: a text full of them is cut further (halved until the value fits), which ordinary text never is.
 */
function copyHeaderValue(facts: CopyFacts): string {
  let value = JSON.stringify(facts);
  // A few rounds cut any text down to its marker; what is left over then is not theirs (a hand-made origin topic).
  for (let round = 0; round < 8 && value.length * 3 > MAX_COPY_HEADER_BYTES && Buffer.byteLength(value, 'utf8') > MAX_COPY_HEADER_BYTES; round += 1) {
    for (const field of ['errorMessage', 'errorName', 'reason'] as const) {
      const text = facts[field];
      if (text !== undefined) facts[field] = truncateText(text, Math.floor(text.length / 2));
    }
    value = JSON.stringify(facts);
  }
  return value;
}

/** The fields of the `lanes-copy` header: the facts `readHandOffHeaders` gives, in the order they are written. */
type CopyFacts = { -readonly [K in keyof HandOffHeaders]: HandOffHeaders[K] };

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

/** The last value of `name` (Kafka's `lastHeader`), from either header shape; `undefined` if absent. */
function lastValue(headers: HeaderList | IHeaders, name: string): Uint8Array | string | undefined {
  if (Array.isArray(headers)) {
    const list = headers as HeaderList;
    for (let i = list.length - 1; i >= 0; i -= 1) {
      const header = list[i];
      if (header?.name === name) return header.value;
    }
    return undefined;
  }
  const object = headers as IHeaders;
  if (!Object.prototype.hasOwnProperty.call(object, name)) return undefined;
  const value = object[name];
  return Array.isArray(value) ? value[value.length - 1] : value;
}

function text(headers: HeaderList | IHeaders, name: string): string | undefined {
  const value = lastValue(headers, name);
  if (typeof value === 'string') return value;
  if (!(value instanceof Uint8Array)) return undefined;
  try {
    return UTF8.decode(value);
  } catch {
    return undefined;
  }
}

function integer(headers: HeaderList | IHeaders, name: string): number | undefined {
  const value = text(headers, name);
  if (value === undefined || !DECIMAL.test(value)) return undefined;
  const number = Number(value);
  return Number.isSafeInteger(number) ? number : undefined;
}

/**
 * Reads the framework facts of a retry or dead-letter copy: the inverse of `handOffMessage`. Tolerant: a missing or
 * garbled fact (not UTF-8, not JSON, not a non-negative integer, an unknown kind) gives an `undefined` field, never an
 * error. A copy with a `lanes-copy` header is read from it alone; a copy without one from the headers copies carried
 * before it (`LegacyHandOffHeader`, one per fact), so copies and dead letters written by the previous release read
 * the same. A repeated header counts by its last value, as Kafka's `lastHeader` does.
 *
 * Takes a header list (a decoded record's headers) or a kafkajs headers object (what a kafkajs consumer hands over).
 *
 * @example
 * const facts = readHandOffHeaders(record.headers);
 * if (facts.dueAtMs !== undefined && facts.dueAtMs > Date.now()) await sleep(facts.dueAtMs - Date.now());
 */
export function readHandOffHeaders(headers: HeaderList | IHeaders): HandOffHeaders {
  const copy = lastValue(headers, HandOffHeader.Copy);
  return copy === undefined ? readLegacyHeaders(headers) : readCopyHeader(text(headers, HandOffHeader.Copy));
}

/** The facts of a `lanes-copy` value; every field `undefined` when it is not a JSON object. */
function readCopyHeader(value: string | undefined): HandOffHeaders {
  let facts: unknown;
  try {
    facts = value === undefined ? undefined : JSON.parse(value);
  } catch {
    facts = undefined;
  }
  const f = (typeof facts === 'object' && facts !== null && !Array.isArray(facts) ? facts : {}) as Record<string, unknown>;
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const int = (v: unknown): number | undefined => (isNonNegativeInteger(v) ? v : undefined);
  const kind = str(f.kind);
  return {
    originTopic: str(f.originTopic) || undefined,
    originPartition: int(f.originPartition),
    originOffset: int(f.originOffset),
    originTimestamp: int(f.originTimestamp),
    lane: str(f.lane) || undefined,
    kind: kind !== undefined && KINDS.has(kind) ? (kind as HandOffKind) : undefined,
    attempt: int(f.attempt),
    dueAtMs: int(f.dueAtMs),
    firstFailureAtMs: int(f.firstFailureAtMs),
    errorName: str(f.errorName),
    errorMessage: str(f.errorMessage),
    reason: str(f.reason),
    deferred: typeof f.deferred === 'boolean' ? f.deferred : undefined,
    leftOut: str(f.leftOut),
    originalValueSize: int(f.originalValueSize),
  };
}

/** The facts of a copy written before `lanes-copy`: one header per fact. */
function readLegacyHeaders(headers: HeaderList | IHeaders): HandOffHeaders {
  const originTopic = text(headers, LegacyHandOffHeader.OriginTopic);
  const kind = text(headers, LegacyHandOffHeader.Kind);
  const deferred = text(headers, LegacyHandOffHeader.Deferred);
  return {
    originTopic: originTopic === '' ? undefined : originTopic,
    originPartition: integer(headers, LegacyHandOffHeader.OriginPartition),
    originOffset: integer(headers, LegacyHandOffHeader.OriginOffset),
    originTimestamp: integer(headers, LegacyHandOffHeader.OriginTimestamp),
    lane: text(headers, LegacyHandOffHeader.Lane) || undefined,
    kind: kind !== undefined && KINDS.has(kind) ? (kind as HandOffKind) : undefined,
    attempt: integer(headers, LegacyHandOffHeader.Attempt),
    dueAtMs: integer(headers, LegacyHandOffHeader.DueAt),
    firstFailureAtMs: integer(headers, LegacyHandOffHeader.FirstFailureAt),
    errorName: text(headers, LegacyHandOffHeader.ErrorClass),
    errorMessage: text(headers, LegacyHandOffHeader.ErrorMessage),
    reason: text(headers, LegacyHandOffHeader.DeadLetterReason),
    deferred: deferred === 'true' ? true : deferred === 'false' ? false : undefined,
    leftOut: text(headers, LegacyHandOffHeader.LeftOut),
    originalValueSize: integer(headers, LegacyHandOffHeader.OriginalValueSize),
  };
}

const LEGACY_NAMES: readonly string[] = Object.values(LegacyHandOffHeader);

/**
 * How a record carries the framework's facts: in a `lanes-copy` header (`copy`, this release), in the headers copies
 * carried before it (`legacy`), or not at all (`undefined`). What a message about a garbled copy names.
 */
export function copyHeaderFormat(headers: HeaderList | IHeaders): 'copy' | 'legacy' | undefined {
  if (lastValue(headers, HandOffHeader.Copy) !== undefined) return 'copy';
  return LEGACY_NAMES.some((name) => lastValue(headers, name) !== undefined) ? 'legacy' : undefined;
}

/**
 * A record's origin: the one its framework headers carry when it is a retry copy, else its own coordinates.
 *
 * @example
 * originOf(recordFromRetryTopic); // { topic: 'orders', partition: 3, offset: 41 }, not the retry topic's
 */
export function originOf(record: KafkaRecord): HandOffOrigin {
  const { originTopic, originPartition, originOffset } = readHandOffHeaders(record.headers);
  // All three or none: a copy with a garbled origin header must not mix its own coordinates with the origin's.
  if (originTopic !== undefined && originPartition !== undefined && originOffset !== undefined) {
    return { topic: originTopic, partition: originPartition, offset: originOffset };
  }
  return { topic: record.topic, partition: record.partition, offset: record.offset };
}
