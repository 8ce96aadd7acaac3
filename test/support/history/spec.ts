/** What a history is: the steps, faults and failures a history plays (see ./history.ts). */

import type { Ordering } from '../../../src/options';

/** How a planned failure throws: a plain error (backoff delay), `RetryLaterError` now or in 5 s, non-retriable, a programming error. */
export type FailureKind = 'transient' | 'soon' | 'later' | 'fatal' | 'bug';

/**
 * What goes wrong in one invocation:
 * - `crash`: the container dies after `after` events (store calls, hand-off writes, handler starts); nothing it
 *   does later takes effect, its done bits not flushed are lost, the event source redelivers the batch;
 * - `die`: the same, as its `start`-th handler starts (a crash aimed at the windows between runs: a lane released
 *   onto its next head, a head failed and not yet handed off);
 * - `cut`: less time left than the deadline margin: no record starts, everything is deferred;
 * - `timeout`: the `start`-th handler started hangs until its record deadline; with `stop`, the invocation stops
 *   starting records before that (records not started are deferred).
 */
export type Fault =
  | { readonly kind: 'none' }
  | { readonly kind: 'crash'; readonly after: number }
  | { readonly kind: 'die'; readonly start: number }
  | { readonly kind: 'cut' }
  | { readonly kind: 'timeout'; readonly start: number; readonly stop: boolean };

/** The source trigger delivers `size` records of a partition (or of all), starting `back` records before its position. */
export interface DeliverStep {
  readonly t: 'deliver';
  readonly partition: number | 'all';
  readonly back: number;
  readonly size: number;
  readonly fault: Fault;
  /** No committer run after this step (it comes before the committer's next period). */
  readonly quiet?: boolean;
}

/**
 * The retry trigger delivers up to `size` copies of each tier (`back` before its position), tiers in ascending
 * or descending order or at once, after the clock moved `advanceMs`. The fault hits the first invocation.
 */
export interface RetryStep {
  readonly t: 'retry';
  readonly order: 'asc' | 'desc' | 'parallel';
  readonly back: number;
  readonly size: number;
  readonly advanceMs: number;
  readonly fault: Fault;
  /** No committer run after this step (it comes before the committer's next period). */
  readonly quiet?: boolean;
  /**
   * As the first invocation's `start`-th handler starts, before it runs: a committer run, Redis loses `what` (as a
   * `lose` step), and a committer run that finds and recovers it, while the invocation goes on.
   */
  readonly during?: { readonly start: number; readonly what: 'lanes' | 'all' };
}

export type Step =
  | DeliverStep
  | RetryStep
  /** A source delivery and a retry delivery at the same time (two functions, two containers). */
  | { readonly t: 'both'; readonly deliver: DeliverStep; readonly retry: RetryStep }
  /** A committer run with its re-drive of expired leases, after the clock moved `advanceMs`; it may crash too. */
  | { readonly t: 'commit'; readonly advanceMs: number; readonly crashAfter: number | undefined }
  /** `kafka-lanes rewind` after an incident: the trigger's position moves to the committed offset. */
  | { readonly t: 'rewind'; readonly what: 'source' | 'tiers' }
  /** `kafka-lanes lane release` of every held lane (the `hold` dead-letter policy). */
  | { readonly t: 'operator' }
  | LoseStep;

/**
 * Redis loses part of the group's state (docs/durability.md), on a backend that can (`HistoryBackend.losses`):
 * - `writes`: every write since the start of the step `back` steps before this one (a snapshot taken then is
 *   restored: a failover onto a replica that lagged, an old snapshot loaded);
 * - `key`: one key of the group, the `pick`-th of its keys in name order (a key evicted, deleted by hand);
 * - `all`: every key of the group (a flush);
 * - `lanes`: the lanes hash of the first source partition alone.
 * With `uncommitted`, the committer did not run after the step before: the lost writes came after its last commit,
 * so its durable marker cannot tell them (only counters and retry copies can).
 */
export interface LoseStep {
  readonly t: 'lose';
  readonly what: 'writes' | 'key' | 'all' | 'lanes';
  readonly back: number;
  readonly pick: number;
  readonly uncommitted: boolean;
  /** No committer run after this step either. */
  readonly quiet?: boolean;
}

export interface PlannedFailure {
  readonly p: number;
  readonly o: number;
  readonly attempt: number;
  readonly kind: FailureKind;
}

export interface HistorySpec {
  readonly ordering: Ordering;
  /** Records without a key: each its own lane, or one lane per partition. */
  readonly nullKey: 'independent' | 'shared';
  readonly deadLetter: 'release' | 'hold';
  readonly maxAttempts: number;
  readonly concurrency: number;
  /** Back-pressure caps of every partition (`maxParked` on Redis only); `undefined`: the defaults, never reached. */
  readonly caps: { readonly maxWindow: number; readonly maxParked: number } | undefined;
  /** Per source partition, the Kafka key of each offset (`null`: no key). */
  readonly keys: ReadonlyArray<ReadonlyArray<string | null>>;
  /** Every record of this key fails every attempt: it exhausts its attempts and is dead-lettered. */
  readonly poison: string | undefined;
  /** Records whose value is not JSON: never run, dead-lettered with reason `deserialization`. */
  readonly badValues: ReadonlyArray<{ readonly p: number; readonly o: number }>;
  /** (partition, offset, attempt) that fail, and how; the first entry for a triple wins. */
  readonly failures: readonly PlannedFailure[];
  /** Ordinals of hand-off writes the broker stores twice (a producer retry). */
  readonly dupWrites: readonly number[];
  readonly steps: readonly Step[];
  /**
   * The retry function is a durable one (docs/ARCHITECTURE.md, "The suspend loop"): each retry delivery is a round, a
   * copy not due yet is left waiting (not done, not written back) and the trigger keeps the batch uncommitted, so the
   * next delivery of the tier is that batch again, as the execution's next round is. Absent: a plain function.
   */
  readonly suspend?: boolean;
}
