/**
 * The hand-off port: the items a sink writes to Kafka (retry and dead-letter copies, outputs), what became of each, and
 * the sink itself. `HandOffWriter` (`handoff/writer.ts`) implements it; the recording writer of src/testing in tests.
 */
import type { KafkaRecord } from '../event';

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

/** Writes retry and dead-letter copies; resolves once the broker acknowledged them (acks=all). */
export interface HandOffSink {
  /**
   * One outcome per item, in order. `refused`: the broker refused the item for good and a stripped dead-letter
   * copy of it was written instead. A transient failure rejects the whole call. `signal` aborts a write that
   * would outlive the invocation.
   */
  write(items: readonly HandOffItem[], options?: { signal?: AbortSignal }): Promise<readonly HandOffOutcome[]>;
  /**
   * Produces the `ctx.send` outputs of records finishing together, one list per record (acks=all). One outcome per
   * record, in order: `undefined` once every output of it is acknowledged, else why not; a record whose outputs
   * were acknowledged is not failed by another's. A rejection fails them all.
   */
  send?(records: ReadonlyArray<readonly OutputMessage[]>, options?: { signal?: AbortSignal }): Promise<ReadonlyArray<Error | undefined>>;
}
