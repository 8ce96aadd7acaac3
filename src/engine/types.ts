import type { Logger } from '@aws-lambda-powertools/logger';
import type { KafkaHeader, RecordCoordinates, TimestampType } from '../event';

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
}

export type RecordHandler<V = unknown, K = unknown> = (record: LanesRecord<V, K>, ctx: LanesContext) => unknown;
