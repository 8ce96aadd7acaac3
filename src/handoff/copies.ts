import { jsonText } from '../describe';
import type { DecodeFailure, KafkaRecord } from '../event';
import { backoffDelay } from '../options/backoff';
import type { LanesOptions } from '../options/lanes-options';
import { deadLetterTopic, retryTopic } from '../options/names';
import { tierFor } from '../options/retry-tiers';
import { replayHeaders } from './first-origin';
import type { ReplayBasis, ReplayCopy } from './types';
import type { HandOffItem, HandOffOrigin } from '../ports/handoff';

/** An error as a copy carries it: its class and its message. */
export interface CopyError {
  readonly name: string;
  readonly message: string;
}

/** What every copy is made of: the record as delivered, its origin, and the lane it belongs to (if any). */
export interface CopyBasis {
  readonly record: KafkaRecord;
  readonly origin: HandOffOrigin;
  readonly lane?: string | undefined;
}

/** A retry copy that is written again as it was (a copy due later than an invocation can wait). */
export interface CopyFacts {
  readonly attempt: number;
  readonly dueAtMs: number;
  readonly firstFailureAtMs: number;
  readonly error?: CopyError | undefined;
  readonly deferred?: boolean | undefined;
}

/** An attempt that failed: its number, when the record first failed, its error, and the error's own delay if any. */
export interface FailedAttempt {
  readonly attempt: number;
  readonly firstFailureAtMs: number;
  readonly error: CopyError;
  readonly delayMs?: number | undefined;
}

/**
 * The one place a hand-off copy is built: retry copies (after a failure, deferred, written back, re-driven)
 * and dead letters. The retry tier follows from the due time, read from the clock once per copy, so a delay
 * equal to a tier's always lands in that tier.
 */
export interface Copies {
  /** The copy for the attempt after `failed.attempt`, due after the error's own delay or the backoff policy's. */
  afterFailure(basis: CopyBasis, failed: FailedAttempt): HandOffItem;
  /** A retry copy with the facts given, in the tier of its due time. */
  retry(basis: CopyBasis, facts: CopyFacts): HandOffItem;
  /** A record handed on without being run (the deadline came, a lane moved on to it): attempt unchanged. */
  deferred(basis: CopyBasis, attempt: number, dueAtMs?: number, firstFailureAtMs?: number): HandOffItem;
  /** A copy as it was read, written to its own tier again with its facts unchanged. */
  writtenBack(basis: CopyBasis, facts: CopyFacts): HandOffItem;
  deadLetter(basis: CopyBasis, attempt: number, reason: string, error: CopyError): HandOffItem;
  /** The dead letter of a record the decoder could not read: its value is the record's JSON as received. */
  malformed(failure: DecodeFailure, reason: string, message: string): HandOffItem;
  /**
   * A dead letter written back to its origin topic as a new record (`kafka-lanes dlq replay`): its key and value,
   * its own headers, where it was read (`lanes-replay-of`) and its first origin (`lanes-first-origin`).
   */
  replay(letter: ReplayBasis): ReplayCopy;
}

/**
 * The copy builder of a group.
 *
 * @example
 * const copies = copiesFor(options, () => Date.now());
 * await sink.write([copies.afterFailure({ record, origin, lane }, { attempt: 1, firstFailureAtMs: Date.now(), error: { name: 'Error', message: 'down' } })]);
 */
export function copiesFor(options: LanesOptions, now: () => number): Copies {
  const { group, retry } = options;
  const retryCopy = retryCopies(options, now);
  const deadLetter = deadLetters(group, now);
  return {
    retry: (basis, facts) => retryCopy(basis, facts),
    afterFailure(basis, { attempt, firstFailureAtMs, error, delayMs }) {
      const at = now();
      const dueAtMs = at + (delayMs ?? backoffDelay(retry.backoff, attempt));
      return retryCopy(basis, { attempt: attempt + 1, dueAtMs, firstFailureAtMs, error }, at);
    },
    deferred(basis, attempt, dueAtMs, firstFailureAtMs) {
      const at = now();
      return retryCopy(basis, { attempt, dueAtMs: dueAtMs ?? at, firstFailureAtMs: firstFailureAtMs ?? at, deferred: true }, at);
    },
    writtenBack(basis, facts) {
      return { ...retryCopy(basis, facts), topic: basis.record.topic };
    },
    deadLetter,
    malformed(failure, reason, message) {
      const record = malformedRecord(failure, now());
      return deadLetter({ record, origin: { topic: failure.topic, partition: failure.partition, offset: failure.offset } }, 0, reason, { name: 'DecodeFailure', message });
    },
    replay({ record, origin }) {
      const replayOf = `${deadLetterTopic(group)}/${record.partition}/${record.offset}`;
      return { topic: origin.topic, key: record.key, value: record.value, headers: replayHeaders(record, origin, replayOf) };
    },
  };
}

/** A group's retry copies: in the tier of their due time from `at` (read from the clock once per copy). */
function retryCopies(options: LanesOptions, now: () => number): (basis: CopyBasis, facts: CopyFacts, at?: number) => HandOffItem {
  const { group, retry } = options;
  // Each tier's topic named once, not for every copy.
  const topics = new Map(retry.tiers.map((tier) => [tier, retryTopic(group, tier)]));
  return (basis, facts, at = now()) => {
    const tier = tierFor(Math.max(0, facts.dueAtMs - at), retry.tiers);
    const item: { -readonly [K in keyof HandOffItem]: HandOffItem[K] } = {
      record: basis.record,
      origin: basis.origin,
      kind: 'retry',
      topic: topics.get(tier) ?? retryTopic(group, tier),
      attempt: facts.attempt,
      dueAtMs: facts.dueAtMs,
      firstFailureAtMs: facts.firstFailureAtMs,
      deferred: facts.deferred === true,
    };
    // Absent, not undefined, when there is none (a copy's fields as before), without a spread's object per copy.
    if (basis.lane !== undefined) item.lane = basis.lane;
    if (facts.error !== undefined) item.error = facts.error;
    return item;
  };
}

/** A group's dead letters, stamped with the clock. */
function deadLetters(group: string, now: () => number): Copies['deadLetter'] {
  return (basis, attempt, reason, error) => {
    const at = now();
    return {
      record: basis.record,
      origin: basis.origin,
      ...(basis.lane === undefined ? {} : { lane: basis.lane }),
      kind: 'dead-letter',
      topic: deadLetterTopic(group),
      attempt,
      dueAtMs: at,
      firstFailureAtMs: at,
      error,
      reason,
    };
  };
}

/** What a dead letter carries of a record the decoder could not read: its JSON as received, as the value. */
function malformedRecord(failure: DecodeFailure, at: number): KafkaRecord {
  return {
    topic: failure.topic,
    partition: failure.partition,
    offset: failure.offset ?? 0,
    timestamp: at,
    timestampType: 'LOG_APPEND_TIME',
    key: null,
    // Any depth: a record nested past the stack's limit is still written in full.
    value: Buffer.from(jsonText(failure.raw), 'utf8'),
    headers: [],
    raw: {} as KafkaRecord['raw'],
  };
}
