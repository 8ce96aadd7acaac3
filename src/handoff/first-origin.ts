import type { IHeaders } from 'kafkajs';
import type { KafkaHeader, KafkaRecord, RecordCoordinates } from '../event';
import { HandOffHeader, HEADER_PREFIX } from './headers';

/**
 * The coordinates a record's identity derives from: its first origin when it carries one (a replayed dead
 * letter), else its origin (a retry copy's comes from its headers).
 *
 * @example
 * firstOriginOf([{ name: 'lanes-first-origin', value: Buffer.from('payments/3/1042') }], origin); // payments, 3, 1042
 */
export function firstOriginOf(headers: readonly KafkaHeader[], origin: RecordCoordinates): RecordCoordinates {
  for (const header of headers) {
    if (header.name !== HandOffHeader.FirstOrigin || header.value === null) continue;
    const parsed = parseFirstOrigin(header.value.toString('utf8'));
    if (parsed !== undefined) return parsed;
  }
  return origin;
}

/** `<topic>/<partition>/<offset>` (Kafka topic names hold no `/`). */
export function formatFirstOrigin(origin: RecordCoordinates): string {
  return `${origin.topic}/${origin.partition}/${origin.offset}`;
}

/** `<topic>/<partition>/<offset>` read back; `undefined` when the text is not one. */
export function parseFirstOrigin(text: string): RecordCoordinates | undefined {
  const match = /^([a-zA-Z0-9._-]+)\/(\d+)\/(\d+)$/.exec(text);
  if (match === null) return undefined;
  const partition = Number(match[2]);
  const offset = Number(match[3]);
  if (!Number.isSafeInteger(partition) || !Number.isSafeInteger(offset)) return undefined;
  return { topic: match[1]!, partition, offset };
}

/**
 * The headers of a dead letter written back to its origin topic as a new record (`kafka-lanes dlq replay`): the
 * record's own headers without the framework's, where it was read in the dead-letter topic (`lanes-replay-of`), and
 * its first origin (`lanes-first-origin`), so `ctx.idempotencyKey` and its completed steps stay those of that origin.
 *
 * @example
 * replayHeaders(letter.record, { topic: 'orders', partition: 3, offset: 41 }, 'orders-svc.dlq/0/7');
 * // { trace: <Buffer>, 'lanes-replay-of': 'orders-svc.dlq/0/7', 'lanes-first-origin': 'orders/3/41' }
 */
export function replayHeaders(record: KafkaRecord, origin: RecordCoordinates, replayOf: string): IHeaders {
  const headers: IHeaders = {};
  for (const { name, value } of record.headers) if (!name.startsWith(HEADER_PREFIX)) headers[name] = value;
  headers[HandOffHeader.ReplayOf] = replayOf;
  headers[HandOffHeader.FirstOrigin] = formatFirstOrigin(firstOriginOf(record.headers, origin));
  return headers;
}
