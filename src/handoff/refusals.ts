/**
 * A copy the broker refuses for good (too large, invalid, not authorized): how the refusal is recognised, and
 * the dead letter without the value that replaces the copy.
 */
import type { Message } from 'kafkajs';
import { KafkaErrorCode, kafkaErrorOf } from '../kafka-errors';
import { HEADER_PREFIX, handOffMessage } from './headers';
import type { HandOffItem } from '../ports/handoff';

/** How much of a refused record its dead letter still carries: all but the value, or only the framework headers. */
export type Stub = 'no-value' | 'bare';

/** Why the broker refused a copy for good, as `HandOffOutcome` reports it. */
export interface Refusal {
  readonly reason: string;
  readonly error: { readonly name: string; readonly message: string };
}

/**
 * Kafka's answers that sending the same record again can never change: the record itself is refused. kafkajs
 * marks them not retriable and gives up at once.
 */
const REFUSED_FOR_GOOD: ReadonlyMap<number, string> = new Map([
  [KafkaErrorCode.MessageTooLarge, 'too-large'],
  [KafkaErrorCode.RecordListTooLarge, 'too-large'],
  [KafkaErrorCode.InvalidRecord, 'invalid-record'],
  [KafkaErrorCode.TopicAuthorizationFailed, 'topic-authorization-failed'],
  [KafkaErrorCode.ClusterAuthorizationFailed, 'cluster-authorization-failed'],
]);

/** The refusal in a failed send, if the broker refused its records for good; `undefined` for anything else. */
export function refusalOf(cause: unknown): Refusal | undefined {
  const kafka = kafkaErrorOf(cause);
  const reason = kafka === undefined ? undefined : REFUSED_FOR_GOOD.get(kafka.code);
  if (kafka === undefined || reason === undefined) return undefined;
  return { reason, error: { name: kafka.type, message: causeMessage(cause) } };
}

// Record overhead in a v2 record batch (length, attributes, deltas, varints) is a few bytes; a generous round
// figure keeps the estimate on the safe side for small records.
const RECORD_OVERHEAD_BYTES = 64;

export function messageBytes(message: Message): number {
  let bytes = RECORD_OVERHEAD_BYTES;
  if (message.key !== null && message.key !== undefined) bytes += Buffer.byteLength(message.key);
  if (message.value !== null) bytes += Buffer.byteLength(message.value);
  const headers = message.headers;
  // A copy's headers have no prototype (see `handOffMessage`): `for in` sees its own names only; an output's are plain.
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    const nameBytes = Buffer.byteLength(name) + 4;
    if (!Array.isArray(value)) bytes += nameBytes + Buffer.byteLength(value);
    else for (const one of value) bytes += nameBytes + Buffer.byteLength(one);
  }
  return bytes;
}

/**
 * The dead letter that replaces a copy the broker refused for good: the record without its value (and, for a
 * `bare` one, without its key and own headers too), with the framework headers of a dead letter, the refusal as its
 * reason, and what it leaves out. Its error is the one the refused copy carried, else the refusal.
 */
export function deadLetterWithout(item: HandOffItem, topic: string, refusal: Refusal, carries: Stub): Message {
  const { record } = item;
  const bare = carries === 'bare';
  return handOffMessage(
    {
      record: {
        ...record,
        value: null,
        key: bare ? null : record.key,
        // The framework headers stay: `handOffMessage` reads the origin timestamp of a retry copy from them.
        headers: bare ? record.headers.filter(({ name }) => name.startsWith(HEADER_PREFIX)) : record.headers,
      },
      origin: item.origin,
      ...(item.lane === undefined ? {} : { lane: item.lane }),
      kind: 'dead-letter',
      topic,
      // A dead letter carries the number of the record's last run; a retry copy, the number of its next one.
      attempt: item.kind === 'retry' ? Math.max(0, item.attempt - 1) : item.attempt,
      dueAtMs: Date.now(),
      firstFailureAtMs: item.firstFailureAtMs,
      error: item.error ?? refusal.error,
      reason: refusal.reason,
    },
    { leftOut: bare ? 'value,key,headers' : 'value', originalValueSize: record.value === null ? 0 : record.value.byteLength },
  );
}

export function causeMessage(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
