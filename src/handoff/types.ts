import type { IHeaders } from 'kafkajs';
import type { KafkaRecord, RecordCoordinates } from '../event';
import type { HandOffKind } from '../ports/handoff';

/** A dead letter to write back to its origin topic (`kafka-lanes dlq replay`): the record as read, and where. */
export interface ReplayBasis {
  /** The dead letter as read from the dead-letter topic. */
  readonly record: KafkaRecord;
  /** Its origin (the offset known: a dead letter without one is not replayed). */
  readonly origin: RecordCoordinates;
}

/** A dead letter written back to its origin topic as a new record: its key and value as read, the replay's headers. */
export interface ReplayCopy {
  readonly topic: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: IHeaders;
}

/** Headers as a list: a decoded record's (`KafkaRecord.headers`), or any `{ name, value }` list in record order. */
export type HeaderList = readonly { readonly name: string; readonly value: Uint8Array | string }[];

/**
 * The framework headers of a hand-off copy, as read back. Every field is `undefined` when its header is missing
 * or garbled, so a hand-made or foreign record never makes the reader throw.
 */
export interface HandOffHeaders {
  readonly originTopic?: string | undefined;
  readonly originPartition?: number | undefined;
  readonly originOffset?: number | undefined;
  /** The timestamp of the original record (epoch ms): a copy gets its own timestamp when it is written. */
  readonly originTimestamp?: number | undefined;
  /** The lane id the copy was written with; absent on copies written before the lane was recorded. */
  readonly lane?: string | undefined;
  readonly kind?: HandOffKind | undefined;
  readonly attempt?: number | undefined;
  readonly dueAtMs?: number | undefined;
  readonly firstFailureAtMs?: number | undefined;
  /** The error class, at most `MAX_ERROR_NAME_LENGTH` characters. */
  readonly errorName?: string | undefined;
  /** The error message, at most `MAX_ERROR_MESSAGE_LENGTH` characters, ending in a marker if it was truncated. */
  readonly errorMessage?: string | undefined;
  readonly reason?: string | undefined;
  readonly deferred?: boolean | undefined;
  /** What a dead letter the broker would not take whole leaves out (`value`, or `value,key,headers`). */
  readonly leftOut?: string | undefined;
  /** The byte length of the value a dead letter left out. */
  readonly originalValueSize?: number | undefined;
}
