import type { IHeaders } from 'kafkajs';
import type { KafkaRecord, RecordCoordinates } from '../event';

/** Where a hand-off copy goes: a retry topic (`<group>.retry.<tier>`) or the dead-letter topic (`<group>.dlq`). */
export type HandOffKind = 'retry' | 'dead-letter';

/** A record's coordinates in its source topic (docs/ARCHITECTURE.md, "Words"): what deduplication always keys on. */
export interface HandOffOrigin {
  readonly topic: string;
  readonly partition: number;
  /** `undefined` only for a dead letter of a malformed record whose offset could not be read. */
  readonly offset: number | undefined;
}

/** One record to hand off: what to write, where, and the framework facts its copy carries. */
export interface HandOffItem {
  /** The record as delivered: an original, or a retry copy read back from a retry topic. */
  readonly record: KafkaRecord;
  /** The record's origin; for a record read from a retry topic, the one its headers carry (see `originOf`). */
  readonly origin: HandOffOrigin;
  /** The lane the record belongs to, as the engine derived it (absent for a record of no lane). */
  readonly lane?: string | undefined;
  readonly kind: HandOffKind;
  /** Target topic, chosen by the caller. */
  readonly topic: string;
  /**
   * A retry copy: the attempt number its next run will be (the first run is 1, as in `LaneHead.attempt`); a
   * deferred record keeps the number it had, since it was never run. A dead-letter copy: the number of the last
   * run (0 if it never ran, e.g. a record no handler could take).
   */
  readonly attempt: number;
  /** Epoch ms before which the retry function must not run the copy (G4). */
  readonly dueAtMs: number;
  /** Epoch ms of the record's first failure (or first hand-off, for a deferred record). */
  readonly firstFailureAtMs: number;
  /** The error of the failed run, if any: `name` is its class (`err.name`). */
  readonly error?: { readonly name: string; readonly message: string } | undefined;
  /** Why the record was dead-lettered (attempts exhausted, non-retriable error, malformed, ...). */
  readonly reason?: string | undefined;
  /** Handed off near the Lambda deadline without being attempted: its attempt was not increased. */
  readonly deferred?: boolean | undefined;
}

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
  /** The lane id the copy was written with (`lanes-lane`); absent on copies written before it existed. */
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

/**
 * Why the broker refused a copy for good: `too-large` (`MESSAGE_TOO_LARGE`, `RECORD_LIST_TOO_LARGE`), else
 * Kafka's error in kebab case (`invalid-record`, `topic-authorization-failed`, ...).
 */
export type RefusalReason = string;

/**
 * What became of one hand-off item, in the order of the items given to `HandOffWriter.write`.
 * - `written`: the copy is acknowledged (acks=all): the record is handed off.
 * - `refused`: the broker refused the copy for good (too large, invalid, not authorized); the writer wrote a
 *   dead-letter copy without the value (origin, headers, the value's size, the reason) and the broker
 *   acknowledged it: the record is terminal, and the full record is kept nowhere else. `error` is the
 *   broker's refusal (`name`: Kafka's error, e.g. `MESSAGE_TOO_LARGE`).
 */
export type HandOffOutcome =
  | { readonly status: 'written' }
  | {
      readonly status: 'refused';
      readonly reason: RefusalReason;
      readonly error: { readonly name: string; readonly message: string };
    };

/** One output as produced: its topic and the message with its `lanes-output` header. */
export interface OutputMessage {
  readonly topic: string;
  readonly key: string | Buffer | null;
  readonly value: string | Buffer | null;
  readonly headers: Readonly<Record<string, string | Buffer>>;
  readonly partition?: number;
}

/**
 * Produces outputs (the idempotent producer, acks=all), one list per record: one outcome per record, `undefined` once
 * the broker acknowledged all of its outputs, else why not.
 */
export interface OutputSink {
  send(records: ReadonlyArray<readonly OutputMessage[]>, options?: { signal?: AbortSignal }): Promise<ReadonlyArray<Error | undefined>>;
}
