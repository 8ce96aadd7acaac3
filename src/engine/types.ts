import type { Logger } from '@aws-lambda-powertools/logger';
import type { KafkaHeader, RecordCoordinates, TimestampType } from '../event';
import type { OutputRecord } from '../lanes/effects';

/** What a handler sees of a record: decoded key and value, headers, origin and timestamp. */
export interface LanesRecord<V = unknown, K = unknown> {
  /** Where this delivery of the record was read: a retry copy's own topic, partition and offset. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly timestampType: TimestampType;
  readonly key: K;
  readonly value: V;
  readonly rawKey: Buffer | null;
  readonly rawValue: Buffer | null;
  readonly headers: readonly KafkaHeader[];
  /** Where the record was first read (a retry copy carries its origin in headers). */
  readonly origin: RecordCoordinates;
}

/** The capabilities a handler gets for one record. */
export interface LanesContext {
  /** 1 for the first run; retries count up to `retry.maxAttempts`. */
  readonly attempt: number;
  /** Aborts at the per-record timeout and before the invocation's deadline. */
  readonly signal: AbortSignal;
  /** Epoch ms after which the record counts as failed. */
  readonly deadline: number;
  readonly logger: Logger;
  /**
   * The record's identity for downstream APIs that accept an idempotency key (payment providers do):
   * `<group>:<topic>:<partition>:<offset>` of its first origin, the same across redeliveries, retries, tiers and
   * dead-letter replays (`kafka-lanes dlq replay` writes it along). Longer than 255 characters, it is
   * `kl-sha256:<hex>` of that text.
   */
  readonly idempotencyKey: string;
  /**
   * Runs `fn` once for this record: its result is stored in the group's Redis, and a later run of the record
   * (retry, redelivery, crash, replay) returns the stored result instead of running `fn` again. A run cut off
   * inside `fn` (a crash, a timeout) runs it again: pass `ctx.idempotencyKey` (plus the step name) downstream to
   * close that window. Steps of one record run one after another in call order; names are unique within a run.
   *
   * @example
   * const charge = await ctx.step('charge', () => psp.charge(order, { idempotencyKey: `${ctx.idempotencyKey}:charge` }));
   */
  step<R>(name: string, fn: () => R | Promise<R>): Promise<R>;
  /**
   * Sends a record to a Kafka topic once the handler succeeds: outputs are produced (idempotent producer,
   * acks=all) before the record is done, with a `lanes-output` header (`<group>/<topic>/<partition>/<offset>/<index>`)
   * that lets a kafka-lanes stage with `dedupeOutputs` drop a repeat. Outputs of a failed run are dropped.
   *
   * @example
   * ctx.send('receipts', { key: order.id, value: { orderId: order.id, charged: charge.id } });
   */
  send(topic: string, record: OutputRecord): void;
}

export type RecordHandler<V = unknown, K = unknown> = (record: LanesRecord<V, K>, ctx: LanesContext) => unknown;
