/**
 * The stable identity of a source record (`ctx.idempotencyKey`): the same for every run of the record, whether it
 * comes again by redelivery, from a retry tier or from a dead-letter replay. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { RecordCoordinates } from '../event';
import { HandOffHeader } from '../handoff/headers';

// The first origin is a hand-off header: read and written in `handoff/headers.ts`.
export { firstOriginOf, formatFirstOrigin, parseFirstOrigin } from '../handoff/first-origin';

/**
 * The header that carries a record's first origin when it is written back to its topic as a new record
 * (`kafka-lanes dlq replay`): `<topic>/<partition>/<offset>`. Retry and dead-letter copies keep it, so a record
 * replayed once, retried and replayed again still names the offset it was first read at.
 */
export const FIRST_ORIGIN_HEADER = HandOffHeader.FirstOrigin;

/** Payment providers cap idempotency keys at 255 characters (Stripe, Adyen's 64 is met by the hashed form too). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * `<group>:<topic>:<partition>:<offset>` of the record's first origin, e.g. `payments-svc:payments:3:1042`.
 * Group and topic names hold only `[a-zA-Z0-9._-]`, so the parts never run into each other. Longer than 255
 * characters (names near Kafka's 249-character limit), it is `kl-sha256:` and the hex SHA-256 of that text.
 *
 * @example
 * idempotencyKeyOf('payments-svc', { topic: 'payments', partition: 3, offset: 1042 }); // 'payments-svc:payments:3:1042'
 */
export function idempotencyKeyOf(group: string, origin: RecordCoordinates): string {
  const key = `${group}:${origin.topic}:${origin.partition}:${origin.offset}`;
  if (key.length <= MAX_IDEMPOTENCY_KEY_LENGTH) return key;
  return `kl-sha256:${createHash('sha256').update(key).digest('hex')}`;
}
