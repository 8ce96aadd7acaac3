/**
 * Randomized histories of one group: source records delivered (and redelivered) as the Lambda Kafka trigger
 * does, handlers that fail as a generated plan says, retry copies delivered late, early, twice or out of
 * order across tiers, invocations cut short or thrown away mid-way, committer runs and re-drives. A ghost
 * kept beside the engine (what every handler run saw, what the broker acknowledged) checks the guarantees of
 * docs/ARCHITECTURE.md, "Guarantees", while the history runs and once everything is drained.
 *
 * The runner is written against `HistoryBackend`: the in-memory completion model for unit tests (thousands of
 * histories), the real Redis store for integration tests (the real Lua scripts). A failing history throws
 * `HistoryViolation` with what broke and the history's trace; `HISTORY_TRACE=1` prints the trace of passing ones.
 *
 * Time: the engine runs on a clock the history moves (retry delays of 5 s and 60 s, leases of 90 s pass in an
 * instant); timers stay real and short (a record deadline of 10 ms, a wait of 2 ms before a copy not yet due goes
 * back to its tier).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import fc from 'fast-check';
import { planCommit } from '../../src/committer/plan';
import type { ParkedRecord, HeadAdvance, HeadClaim, HeadClaimRequest, LaneHead, LaneHold, NewLaneHead } from '../../src/ports/lane-head';
import type { CompletionStore } from '../../src/completion/store';
import type { AdmitRecord, AdmitResult } from '../../src/ports/admission';
import type { PartitionRef, OriginState } from '../../src/ports/partition';
import { Engine, type RecordPath, type EngineTask } from '../../src/engine/engine';
import type { Clock } from '../../src/ports/clock';
import type { CompletionPort } from '../../src/ports/completion';
import type { HandOffSink, HandOffItem, HandOffOutcome } from '../../src/ports/handoff';
import type { Telemetry } from '../../src/telemetry';
import type { RecordLog } from '../../src/recovery/read-range';
import type { LanesContext, LanesRecord, RecordHandler } from '../../src/engine/types';
import { NonRetriableError, RetryLaterError } from '../../src/errors';
import { decodeKafkaEvent, decodeKafkaEventLazily, encodeKafkaEvent, type KafkaBatchResponse, type KafkaRecordInput } from '../../src/event';
import { readHandOffHeaders } from '../../src/handoff/headers';
import { resolveOptions, type LanesOptions, type LanesOptionsInput, type Ordering } from '../../src/options';
import { retryTierOf, retryTopic } from '../../src/options/names';
import { SourcePath } from '../../src/source/source-path';
import { RetryPath } from '../../src/retry/retry-path';
import { releaseHeldLane } from '../../src/retry/operator';
import { redriveExpiredLeases } from '../../src/recovery/redrive';
import { CompletionModelStore } from '../../src/testing/completion-model';
import { copyRecord, within } from './engine-rig';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// ---- what a history is ----------------------------------------------------------------------------

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
}

// ---- generators -------------------------------------------------------------------------------------

export interface HistoryShape {
  readonly orderings: readonly Ordering[];
  readonly partitions: 1 | 2;
  readonly maxRecords: number;
  readonly maxSteps: number;
  /** The Kafka keys records get (besides null); default `a`, `b`, `c`. One key: long lanes, much parking. */
  readonly keys?: readonly string[];
  /** Histories may hold `lose` steps (Redis losing state): only for a backend with `losses`. */
  readonly losses?: boolean;
  /**
   * Every history opens with the partition's first minute: a delivery, then Redis loses every key or its last
   * writes before any committer run, so no durable marker exists yet (with `losses`).
   */
  readonly firstMinute?: boolean;
  /**
   * With `firstMinute`: before the loss, retry deliveries drain lanes (their copies due, crashes likely), no committer
   * run in between: drained heads in the first minute (issue 39).
   */
  readonly firstDrain?: boolean;
  /** What the first minute's loss takes: every key or the last writes (default), or the lanes hash alone. */
  readonly firstLoss?: 'lanes';
  /** Every history runs under the `hold` dead-letter policy (default: either policy). */
  readonly hold?: boolean;
  /** Every history has a poison key (every record of it fails every attempt): blocked and held lanes are common. */
  readonly poison?: boolean;
}

const loseArb: fc.Arbitrary<LoseStep> = fc.record({
  t: fc.constant('lose' as const),
  what: fc.constantFrom('writes' as const, 'writes' as const, 'key' as const, 'all' as const),
  back: fc.integer({ min: 1, max: 3 }),
  pick: fc.nat({ max: 1_000 }),
  uncommitted: fc.boolean(),
});

/** Faults of an invocation, weighed against 10 for none (the retry function's crash windows are narrower). */
function faultArb(crashWeight: number, dieWeight: number, maxEvents: number): fc.Arbitrary<Fault> {
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant<Fault>({ kind: 'none' }) },
    { weight: crashWeight, arbitrary: fc.nat({ max: maxEvents }).map((after): Fault => ({ kind: 'crash', after })) },
    { weight: dieWeight, arbitrary: fc.integer({ min: 1, max: 3 }).map((start): Fault => ({ kind: 'die', start })) },
    { weight: 1, arbitrary: fc.constant<Fault>({ kind: 'cut' }) },
    { weight: 1, arbitrary: fc.record({ start: fc.integer({ min: 1, max: 4 }), stop: fc.boolean() }).map(({ start, stop }): Fault => ({ kind: 'timeout', start, stop })) },
  );
}

function deliverArb(shape: HistoryShape): fc.Arbitrary<DeliverStep> {
  const partition: fc.Arbitrary<number | 'all'> = shape.partitions === 1 ? fc.constant(0) : fc.constantFrom<number | 'all'>(0, 1, 'all');
  return fc.record({
    t: fc.constant('deliver' as const),
    partition,
    back: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) }),
    size: fc.integer({ min: 1, max: shape.maxRecords }),
    fault: faultArb(4, 2, 14),
  });
}

const retryArb: fc.Arbitrary<RetryStep> = fc.record({
  t: fc.constant('retry' as const),
  order: fc.constantFrom('asc' as const, 'desc' as const, 'parallel' as const),
  back: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
  size: fc.integer({ min: 1, max: 6 }),
  // 0: copies delayed by the backoff (60 s) or by `later` (5 s) are not due yet; 6 s: only the 5 s ones are.
  advanceMs: fc.constantFrom(0, 6_000, 61_000),
  fault: faultArb(6, 5, 20),
});

/** Random histories of one group; `shape` bounds their size. */
export function historyArb(shape: HistoryShape): fc.Arbitrary<HistorySpec> {
  const names = shape.keys ?? ['a', 'b', 'c'];
  const key = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.constant(null) });
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 5, arbitrary: deliverArb(shape) },
    { weight: 4, arbitrary: retryArb },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('both' as const), deliver: deliverArb(shape), retry: retryArb }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('commit' as const),
        advanceMs: fc.constantFrom(0, 200_000),
        crashAfter: fc.option(fc.nat({ max: 4 }), { nil: undefined, freq: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('rewind' as const), what: fc.constantFrom('source' as const, 'tiers' as const) }) },
    { weight: 1, arbitrary: fc.constant({ t: 'operator' as const }) },
    ...(shape.losses === true ? [{ weight: 2, arbitrary: loseArb }] : []),
  );
  return fc.record({
    ordering: fc.constantFrom(...shape.orderings),
    nullKey: fc.constantFrom('independent' as const, 'shared' as const),
    deadLetter: shape.hold === true ? fc.constant('hold' as const) : fc.constantFrom('release' as const, 'hold' as const),
    maxAttempts: fc.integer({ min: 1, max: 3 }),
    concurrency: fc.constantFrom(1, 2, 8),
    caps: fc.option(fc.record({ maxWindow: fc.integer({ min: 1, max: 4 }), maxParked: fc.integer({ min: 1, max: 3 }) }), { nil: undefined, freq: 4 }),
    keys: fc.array(fc.array(key, { minLength: 1, maxLength: shape.maxRecords }), { minLength: shape.partitions, maxLength: shape.partitions }),
    poison: shape.poison === true ? fc.constantFrom(...names) : fc.option(fc.constantFrom(...names), { nil: undefined, freq: 4 }),
    badValues: fc.array(fc.record({ p: fc.nat({ max: shape.partitions - 1 }), o: fc.nat({ max: shape.maxRecords - 1 }) }), { maxLength: 2 }),
    failures: fc.array(
      fc.record({
        p: fc.nat({ max: shape.partitions - 1 }),
        o: fc.nat({ max: shape.maxRecords - 1 }),
        attempt: fc.integer({ min: 1, max: 3 }),
        kind: fc.constantFrom<FailureKind>('transient', 'transient', 'soon', 'later', 'fatal', 'bug'),
      }),
      { maxLength: 8 },
    ),
    dupWrites: fc.array(fc.nat({ max: 20 }), { maxLength: 3 }),
    steps: shape.firstMinute === true && shape.firstDrain === true
      ? fc.tuple(deliverArb(shape), retryArb, retryArb, fc.constantFrom('all' as const, 'writes' as const), fc.array(step, { minLength: 1, maxLength: shape.maxSteps }))
        .map(([first, drain, again, what, rest]): Step[] => [
          { ...first, quiet: true },
          { ...drain, advanceMs: 61_000, quiet: true },
          { ...again, quiet: true },
          { t: 'lose', what, back: 1, pick: 0, uncommitted: true },
          ...rest,
        ])
      : shape.firstMinute === true
      ? fc.tuple(deliverArb(shape), shape.firstLoss === 'lanes' ? fc.constant('lanes' as const) : fc.constantFrom('all' as const, 'writes' as const), fc.array(step, { minLength: 1, maxLength: shape.maxSteps }))
        .map(([first, what, rest]): Step[] => [first, { t: 'lose', what, back: 1, pick: 0, uncommitted: true }, ...rest])
      : fc.array(step, { minLength: 1, maxLength: shape.maxSteps }),
  });
}

/** The shapes of the unit tests' histories, and of `npm run fuzz:histories`, by name. */
/** Shapes that hold `lose` steps of their own: run on Redis only. */
export const LOSS_SHAPES = {
  'key mode, the first minute': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true },
  'key mode, hold, the first minute': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true, hold: true, poison: true },
  'partition mode, the lanes hash lost in the first minute': { orderings: ['partition'], partitions: 1, maxRecords: 8, maxSteps: 10, losses: true, firstMinute: true, firstLoss: 'lanes', poison: true },
  'key mode, drained heads in the first minute': { orderings: ['key', 'partition'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true, firstDrain: true },
  'key mode, hold, held lanes through recoveries': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 12, keys: ['a', 'b'], losses: true, hold: true, poison: true },
} as const satisfies Record<string, HistoryShape>;

export const HISTORY_SHAPES = {
  'key mode, one partition': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10 },
  'key mode, one hot key': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a'] },
  'key mode, two partitions': { orderings: ['key'], partitions: 2, maxRecords: 6, maxSteps: 10 },
  'partition mode': { orderings: ['partition'], partitions: 2, maxRecords: 6, maxSteps: 10 },
  'unordered mode': { orderings: ['unordered'], partitions: 1, maxRecords: 8, maxSteps: 10 },
} as const satisfies Record<string, HistoryShape>;

/** What the hand-written histories below share: key mode, one partition, one record at a time, nothing random. */
const ONE_LANE = {
  ordering: 'key',
  nullKey: 'independent',
  concurrency: 1,
  caps: undefined,
  poison: undefined,
  badValues: [],
  dupWrites: [],
} as const satisfies Partial<HistorySpec>;

/**
 * A regression history (a bug these histories found): key mode under the `hold` policy, one record that fails
 * non-retriably; the processor's container dies after three events (admit, handler start, then the dead-letter
 * write), before the lane is blocked as held; then an operator releases every held lane. The processor used to
 * block the lane as held before the dead-letter write, so the crash left a held lane whose record was never
 * dead-lettered, and the release set its done bit: the record was lost.
 */
export const HELD_BEFORE_DEAD_LETTER: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'hold',
  maxAttempts: 1,
  keys: [['b']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'fatal' }],
  steps: [{ t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'crash', after: 3 } }, { t: 'operator' }],
};

/** `HELD_BEFORE_DEAD_LETTER` with the container dying one event earlier: as the handler fails, before any hand-off. */
export const DEAD_BEFORE_DEAD_LETTER: HistorySpec = {
  ...HELD_BEFORE_DEAD_LETTER,
  steps: [{ t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'crash', after: 2 } }, { t: 'operator' }],
};

/**
 * A regression history (a bug these histories found): two copies of one lane head with the same attempt, in
 * different tiers, both ran at once while the head check was a read; it is a claim now (`claim-1.lua`). Key mode,
 * one record, attempts 1 and 2 fail. The retry function runs the attempt-2 copy (`1m`@0): it fails, `advance` takes
 * a lease, the attempt-3 copy is written to `1m`@1, and the container dies before the lease comes
 * off (admit, head check, handler start, advance, write: five events). The attempt-2 copy is delivered again and
 * dropped as stale. The committer's re-drive, once the lease expired, writes the head's copy again, due already,
 * to `1s`@0. Both tiers are then delivered at once: one copy claims the head and runs, the other goes back to its
 * tier until the claim ends, and is dropped as stale then.
 */
export const TWIN_COPIES: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 3,
  keys: [['a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'transient' }, { p: 0, o: 0, attempt: 2, kind: 'transient' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'none' } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 61_000, fault: { kind: 'crash', after: 5 } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' } },
    { t: 'commit', advanceMs: 200_000, crashAfter: undefined },
    { t: 'retry', order: 'parallel', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' } },
  ],
};

/**
 * An example to run first among random histories, so that they surely reach a re-drive: 0:0 fails once; its retry copy
 * succeeds and releases the lane onto 0:1 with a lease, and the retry function dies as 0:1 starts. Only the
 * committer's re-drive (once the lease expired) writes 0:1's copy again.
 */
export const REDRIVEN_HEAD: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 3,
  keys: [['a', 'a', 'a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'transient' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 3, fault: { kind: 'none' } },
    { t: 'retry', order: 'asc', back: 0, size: 3, advanceMs: 61_000, fault: { kind: 'die', start: 2 } },
  ],
};

/**
 * Regressions found by the `lose` histories (on the real Redis backend): one record of key `a` fails once (`soon`),
 * its copy runs and succeeds, the committer commits past it; then Redis is restored to a snapshot from before the
 * copy ran. The restored lane was blocked on a head below the committed offset, whose copy was consumed, while
 * frontier, highest and generation all matched the marker: nothing was found and the lane waited for ever. A lane
 * head below the committed offset is now a loss (`head-below-committed`).
 */
export const RESTORED_BEFORE_RETRY: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 2,
  keys: [['a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'soon' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'none' } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' } },
    { t: 'lose', what: 'writes', back: 1, pick: 0, uncommitted: false },
  ],
};

/**
 * Like `RESTORED_BEFORE_RETRY`, for a second key, with the loss striking before the committer ran after the copy:
 * the copy's run and its lane's release are lost, the head is back in its lane with no lease and its copy
 * consumed. Nothing moved the lane again. A retrying head an hour past its due time is now a loss (`head-overdue`).
 */
export const RELEASE_LOST: HistorySpec = {
  ...RESTORED_BEFORE_RETRY,
  keys: [['a', 'b']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'soon' }, { p: 0, o: 1, attempt: 1, kind: 'soon' }],
  steps: [
    ...RESTORED_BEFORE_RETRY.steps.slice(0, 2),
    ...RESTORED_BEFORE_RETRY.steps.slice(0, 2),
    { t: 'lose', what: 'writes', back: 1, pick: 0, uncommitted: true },
  ],
};

/**
 * A regression found by the `lose` histories: partition mode, a window cap of 1; a record runs, its done bit is lost
 * (a snapshot from before its run restored, before the committer ran), the trigger has moved past it. Its frontier
 * stayed below the next record, which the window cap refused for ever; not even a stall was reported. A frontier
 * below where the event source committed is now a loss (`passed-not-done`).
 */
export const DONE_BIT_LOST: HistorySpec = {
  ...ONE_LANE,
  ordering: 'partition',
  deadLetter: 'release',
  maxAttempts: 1,
  caps: { maxWindow: 1, maxParked: 1 },
  keys: [['a', 'a']],
  failures: [],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'crash', after: 1 } },
    { t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'none' } },
    { t: 'lose', what: 'writes', back: 1, pick: 0, uncommitted: true },
  ],
};

/**
 * A regression found by the `lose` histories: a partition is recovered (its heads wait for the re-drive), then the
 * tracked set is lost and nothing is admitted on the partition any more. The committer still found the partition by
 * its marker, but the re-drive reads the tracked set: the heads' copies were never written. The committer now adds
 * a partition it found by its marker alone back to the tracked set.
 */
export const TRACKED_SET_LOST: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 2,
  keys: [['a', 'a', 'a', 'b']],
  poison: 'a',
  failures: [{ p: 0, o: 3, attempt: 1, kind: 'later' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 1, fault: { kind: 'none' } },
    { t: 'deliver', partition: 0, back: 0, size: 3, fault: { kind: 'none' } },
    { t: 'lose', what: 'writes', back: 1, pick: 0, uncommitted: false },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'die', start: 1 } },
    { t: 'lose', what: 'writes', back: 1, pick: 0, uncommitted: false },
    { t: 'lose', what: 'key', back: 1, pick: 53, uncommitted: false },
  ],
};

/**
 * A regression found by the first-minute histories: record 0 of key `a` is admitted (the process adds the partition
 * to the tracked set) and its container dies; Redis loses every key before any committer run, the tracked set with
 * them. The next delivery makes the state anew (records 0 and 1, deferred: 0 is handed off, 1 parked behind it)
 * within the minute in which the process does not add the partition again. The copy of 0 runs, fails for good, is
 * dead-lettered and released: 1 becomes the head with a lease, and the container dies as it runs. Only the
 * committer's re-drive of the expired lease brings 1 back, and the re-drive reads the tracked set: 1 never
 * completed. A call of `admit` that makes a partition's state now adds the partition to the tracked set at once.
 */
export const STATE_REMADE_UNTRACKED: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 1,
  keys: [['a', 'a']],
  poison: 'a',
  failures: [],
  steps: [
    { t: 'deliver', partition: 0, back: 1, size: 1, fault: { kind: 'die', start: 1 } },
    { t: 'lose', what: 'all', back: 1, pick: 0, uncommitted: true },
    { t: 'deliver', partition: 0, back: 0, size: 2, fault: { kind: 'cut' } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'crash', after: 5 } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' } },
  ],
};

/**
 * For the deliberate breakages: under `hold`, record 0 of key `a` fails for good and holds its lane, records 1 and 2
 * are parked behind it, the committer commits (its marker) and Redis loses every key. No retry copy exists to
 * report the loss: only the durable marker finds it, and only a recovery that reads the records again brings
 * records 1 and 2 back.
 */
export const HELD_LANE_FLUSHED: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'hold',
  maxAttempts: 1,
  keys: [['a', 'a', 'a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'fatal' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 3, fault: { kind: 'none' } },
    { t: 'lose', what: 'all', back: 1, pick: 0, uncommitted: false },
  ],
};

/**
 * Issue 39, a drained head in the first minute: record 0 of key `a` fails once, records 1-3 are parked behind it, and
 * no committer runs yet (no durable marker). The copy of 0 succeeds and releases the lane onto 1, leased by its
 * invocation, which dies as 1 starts. The copy is delivered again and finds its lane moved on to 1; then Redis loses
 * every key. The drained head's lease and the park list lived only in Redis, and the trigger had committed past
 * records 1-3: nothing in Kafka named them, and they never ran. The copy that starts a drain in the first minute now
 * writes itself back as the lane's watch copy (and so does a copy finding its lane moved on), which reports the loss.
 */
export const DRAIN_KILLED_UNMARKED: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 3,
  keys: [['a', 'a', 'a', 'a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'transient' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 4, fault: { kind: 'none' }, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 61_000, fault: { kind: 'die', start: 2 }, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' }, quiet: true },
    { t: 'lose', what: 'all', back: 1, pick: 0, uncommitted: true },
  ],
};

/**
 * Issue 39, a kept copy's write-backs: record 0 of key `a` fails with `RetryLaterError(5 s)`, record 1 is parked
 * behind it, the committer commits its marker; then Redis loses the partition's lanes hash and no committer runs for
 * a while. The copy of 0 is handed over by its tier four times, once when due. It used to be written back "kept for a
 * recovery", due 30 s later, on every pass (due or not): its tier handed it straight back. Now a copy not due goes back
 * unchanged, and a kept one is written back with a new due time only when due: once here.
 */
export const KEPT_COPY_WAITS: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 3,
  keys: [['a', 'a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'later' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 2, fault: { kind: 'none' } },
    { t: 'lose', what: 'lanes', back: 1, pick: 0, uncommitted: false, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' }, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 6_000, fault: { kind: 'none' }, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' }, quiet: true },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 0, fault: { kind: 'none' }, quiet: true },
  ],
};

/**
 * Issue 39, a recovered lane whose old invocation still runs: record 0 of key `a` fails once, records 1-3 are parked,
 * the committer commits its marker. The copy of 0 succeeds and releases the lane onto 1, leased by its invocation; as
 * 1 starts, the committer commits past 0, Redis loses the lanes hash, and the next committer run recovers the
 * partition from 1 (1 is the rebuilt head, its copy written due now). The old invocation's run of 1 ends and its
 * release used to succeed on the rebuilt lane: 2 became the head under the old invocation's lease, the invocation
 * died as 2 started, and the lane waited for that lease to expire and for the committer's re-drive. A release now
 * holds what its run holds on the head (the lease, the claim): the rebuilt lane refuses it, and the recovery's copy
 * of 1 runs the lane on at once.
 */
export const RECOVERED_UNDER_OLD_LEASE: HistorySpec = {
  ...ONE_LANE,
  deadLetter: 'release',
  maxAttempts: 3,
  keys: [['a', 'a', 'a', 'a']],
  failures: [{ p: 0, o: 0, attempt: 1, kind: 'transient' }],
  steps: [
    { t: 'deliver', partition: 0, back: 0, size: 4, fault: { kind: 'none' } },
    { t: 'retry', order: 'asc', back: 0, size: 1, advanceMs: 61_000, fault: { kind: 'die', start: 3 }, during: { start: 2, what: 'lanes' } },
  ],
};

// ---- the backends -----------------------------------------------------------------------------------

/** The completion store as the engine and the committer's re-drive see it. */
export interface HistoryStore extends CompletionPort {
  trackedPartitions(group: string): Promise<PartitionRef[]>;
  laneHeads(ref: PartitionRef): Promise<LaneHead[]>;
  firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined>;
}

/** Where a history keeps its completion state, and how the ghost reads it. */
export interface HistoryBackend {
  readonly group: string;
  readonly source: string;
  readonly store: HistoryStore;
  /** Which of `offsets` have their done bit set now (offsets below the base count as set). */
  doneOffsets(ref: PartitionRef, offsets: readonly number[]): Promise<Set<number>>;
  /** The offsets kept in the partition's park lists now, over the lanes given. */
  parkedOffsets(ref: PartitionRef, lanes: readonly string[]): Promise<Set<number>>;
  /** How many lanes of the partition are blocked now. */
  blockedLanes(ref: PartitionRef): Promise<number>;
  /**
   * One committer run without its re-drive: reads every tracked partition's frontier (trimming the bitmap), plans
   * the commit against what the completion group has, applies it; with `losses`, finds lost state and recovers it
   * through `recovery`. Returns the committed offset of each partition, by `tpKey`, and the losses found.
   */
  commit(nowMs: number, recovery: HistoryRecovery): Promise<CommitOutcome>;
  /**
   * The committed offsets are durable (`<group>.lanes` never passes a parked record or a lane head): G2 is then
   * checked without counting parked records or lane heads handed off as safe.
   */
  readonly durable: boolean;
  /** How Redis loses state, for `lose` steps; `undefined`: the backend cannot. */
  readonly losses?: LossPort;
}

/** What a committer run recovers a lost partition with: the history's source log, its sink, its options. */
export interface HistoryRecovery {
  readonly source: RecordLog;
  readonly sink: HandOffSink;
  readonly options: LanesOptions;
  readonly telemetry: Telemetry;
  /** Where each trigger is (what its event source mapping committed), by topic and partition. */
  readonly delivered: (topics: readonly string[]) => Promise<Array<{ topic: string; partition: number; offset: number }>>;
}

/** A partition a committer run found lost, and where it was recovered from. */
export interface LossFound {
  readonly topic: string;
  readonly partition: number;
  readonly reason: string;
  /** The durable frontier its records were read again from; `undefined`: not recovered (see `error`). */
  readonly recoveredFrom: number | undefined;
  /** Where the completion group was moved back to first: a commit made before any marker passed lost records. */
  readonly rewoundTo?: number | undefined;
  readonly error?: string;
}

export interface CommitOutcome {
  readonly committed: Map<string, number>;
  readonly losses: readonly LossFound[];
}

/** Redis losing state (the `lose` steps). */
export interface LossPort {
  /** A copy of every key of the group now. */
  snapshot(): Promise<unknown>;
  /** The group's keys become exactly what `snapshot` copied (`undefined`: none at all). */
  restore(snapshot: unknown): Promise<void>;
  /** Deletes the `pick`-th key of the group (modulo their number, in name order); returns it and its partition. */
  loseKey(pick: number): Promise<{ key: string; partition: PartitionRef | undefined } | undefined>;
  /** Deletes the lanes hash of a partition; returns whether it held blocked lanes. */
  loseLanes(ref: PartitionRef): Promise<boolean>;
  /** Whether the completion group's commit of a partition carries a durable marker. */
  hasMarker(topic: string, partition: number): boolean;
  /** The lowest offset the marker's commits vouch for (`DurableMarker.since`), if known. */
  markerSince(topic: string, partition: number): number | undefined;
}

export const tpKey = (topic: string, partition: number): string => `${topic}-${partition}`;

/** The in-memory model of the Redis layout (docs/ARCHITECTURE.md) (`CompletionModelStore`), with what the re-drive reads. */
export class ModelHistoryStore implements HistoryStore {
  readonly model: CompletionModelStore;

  constructor(model = new CompletionModelStore()) {
    this.model = model;
  }

  // The model has no epochs: nothing in a history changes owners.
  admit(ref: PartitionRef, records: readonly AdmitRecord[]): Promise<AdmitResult> {
    return this.model.admit(ref, records);
  }

  markDone(ref: PartitionRef, offsets: readonly number[]): Promise<number> {
    return this.model.markDone(ref, offsets);
  }

  block(ref: PartitionRef, head: NewLaneHead, parked?: readonly ParkedRecord[], epoch?: number, nowMs?: number): Promise<number> {
    return this.model.block(ref, head, parked, epoch, nowMs);
  }

  // The model keeps no claims and is never rebuilt: it takes no hold (a release is refused only for another head).
  release(ref: PartitionRef, lane: string, expectedHeadOffset: number, nextAttempt?: number, nowMs?: number, leaseUntilMs?: number): Promise<ParkedRecord | undefined> {
    return this.model.release(ref, lane, expectedHeadOffset, nextAttempt, nowMs, leaseUntilMs);
  }

  advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    return this.model.advance(ref, lane, expected, next);
  }

  laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    return this.model.laneHead(ref, lane);
  }

  claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    return this.model.claimHead(ref, lane, expected, claim);
  }

  withLimits(): CompletionPort {
    return this;
  }

  async trackedPartitions(group: string): Promise<PartitionRef[]> {
    return [...this.model.partitions.keys()]
      .map((id) => id.split('\n'))
      .filter(([g]) => g === group)
      .map(([g, topic, partition]) => ({ group: g!, topic: topic!, partition: Number(partition) }));
  }

  async laneHeads(ref: PartitionRef): Promise<LaneHead[]> {
    return [...this.model.partition(ref).lanes.entries()].map(([lane, head]) => ({ ...head, lane }));
  }

  async firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined> {
    return this.model.partition(ref).park.get(lane)?.[0];
  }
}

/** The per-offset state of the model, which it keeps private: the ghost reads done bits for the G7 check. */
interface ModelInternals {
  readonly done: Set<number>;
  readonly base: number | undefined;
}

/** A backend on the in-memory model; the committer's plan is `planCommit`, as `runCommitter` uses it. */
export class ModelBackend implements HistoryBackend {
  readonly group = 'grp';
  readonly source = 'orders';
  readonly store: ModelHistoryStore;
  /** What the completion group has committed (Kafka, in the AWS topology). */
  readonly #committed = new Map<string, number>();

  /** `caps`: the window cap (the model has no parked cap). */
  constructor(caps?: { readonly maxWindow: number }) {
    this.store = new ModelHistoryStore(new CompletionModelStore(caps?.maxWindow));
  }

  async doneOffsets(ref: PartitionRef, offsets: readonly number[]): Promise<Set<number>> {
    const model = this.store.model.partition(ref).model as unknown as ModelInternals;
    const base = model.base;
    return new Set(offsets.filter((o) => base !== undefined && (o < base || model.done.has(o))));
  }

  async parkedOffsets(ref: PartitionRef): Promise<Set<number>> {
    return new Set([...this.store.model.partition(ref).park.values()].flatMap((list) => list.map((r) => r.offset)));
  }

  async blockedLanes(ref: PartitionRef): Promise<number> {
    return this.store.model.partition(ref).lanes.size;
  }

  readonly durable = false;

  async commit(nowMs: number): Promise<CommitOutcome> {
    const refs = await this.store.trackedPartitions(this.group);
    const frontiers = refs.map((ref) => {
      const { model } = this.store.model.partition(ref);
      const frontier = model.frontier();
      return { topic: ref.topic, partition: ref.partition, reading: frontier === undefined ? undefined : { base: 0, highest: model.admittedUpTo, frontier } };
    });
    const committed = [...this.#committed.entries()].map(([key, offset]) => {
      const cut = key.lastIndexOf('-');
      return { topic: key.slice(0, cut), partition: Number(key.slice(cut + 1)), offset };
    });
    const plan = planCommit({ frontiers, committed, nowMs });
    for (const move of plan.moves) this.#committed.set(tpKey(move.topic, move.partition), move.to);
    // The committer trims while it reads: trimming never moves the frontier.
    for (const ref of refs) this.store.model.partition(ref).model.trim();
    return { committed: new Map(this.#committed), losses: [] };
  }
}

// ---- the runner -------------------------------------------------------------------------------------

/** The container of an invocation is gone: nothing it does takes effect any more. */
export class ContainerGone extends Error {
  constructor() {
    super('container gone');
    this.name = 'ContainerGone';
  }
}

/** One Lambda execution environment, for one invocation: it may die after a number of events. */
class Container {
  dead = false;
  #left: number | undefined;
  #starts = 0;
  readonly #hangAt: number | undefined;
  readonly #dieAt: number | undefined;

  constructor(fault: Fault | undefined) {
    this.#left = fault?.kind === 'crash' ? fault.after : undefined;
    this.#hangAt = fault?.kind === 'timeout' ? fault.start : undefined;
    this.#dieAt = fault?.kind === 'die' ? fault.start : undefined;
  }

  /** One more event (a store call, a write, a handler start); `false`: the container died before it. */
  tick(): boolean {
    if (this.dead) return false;
    if (this.#left === undefined) return true;
    if (this.#left === 0) {
      this.dead = true;
      return false;
    }
    this.#left -= 1;
    return true;
  }

  /** A handler starts: `false` if the container dies as it does; `hang` if it is the one to hang. */
  start(): { alive: boolean; hang: boolean } {
    this.#starts += 1;
    if (this.#starts === this.#dieAt) this.dead = true;
    if (!this.tick()) return { alive: false, hang: false };
    return { alive: true, hang: this.#starts === this.#hangAt };
  }
}

/** The model's answer to a retry copy's loss check: a state that is whole (the model loses nothing). */
const WHOLE_STATE: OriginState = {
  audit: { present: true, base: undefined, highest: undefined, generation: undefined, parked: 0, parkedInLists: 0, lanes: 0, openLanes: 0, lowestHead: undefined, recoveringUntil: undefined, recoveries: 0 },
  originDone: undefined,
};

/** The store as one container sees it: every call is an event; calls after its death fail and change nothing. */
class ContainerStore implements HistoryStore {
  constructor(
    private readonly inner: HistoryStore,
    private readonly container: Container,
    private readonly onRelease: (ref: PartitionRef, offset: number) => void,
  ) {}

  #gate(): void {
    if (!this.container.tick()) throw new ContainerGone();
  }

  async admit(ref: PartitionRef, records: readonly AdmitRecord[], epoch?: number): Promise<AdmitResult> {
    this.#gate();
    return this.inner.admit(ref, records, epoch);
  }

  async markDone(ref: PartitionRef, offsets: readonly number[], epoch?: number): Promise<number> {
    this.#gate();
    return this.inner.markDone(ref, offsets, epoch);
  }

  async block(ref: PartitionRef, head: NewLaneHead, parked?: readonly ParkedRecord[], epoch?: number, nowMs?: number): Promise<number> {
    this.#gate();
    return this.inner.block(ref, head, parked, epoch, nowMs);
  }

  async release(ref: PartitionRef, lane: string, expectedHeadOffset: number, nextAttempt?: number, nowMs?: number, leaseUntilMs?: number, hold?: LaneHold): Promise<ParkedRecord | undefined> {
    this.#gate();
    const next = await this.inner.release(ref, lane, expectedHeadOffset, nextAttempt, nowMs, leaseUntilMs, hold);
    this.onRelease(ref, expectedHeadOffset);
    return next;
  }

  async advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    this.#gate();
    return this.inner.advance(ref, lane, expected, next);
  }

  async laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    this.#gate();
    return this.inner.laneHead(ref, lane);
  }

  /**
   * A retry copy finding its lane free reads what it judges a loss by, one step of the history. The model has no such
   * reading: it answers a whole state (it loses nothing).
   */
  async originState(ref: PartitionRef, origin: number): Promise<OriginState> {
    this.#gate();
    return this.inner.originState?.(ref, origin) ?? WHOLE_STATE;
  }

  /** Part of the copy's loss check, gated with `originState` (one step, as the check was). */
  get reportLoss(): CompletionPort['reportLoss'] {
    const inner = this.inner;
    return inner.reportLoss === undefined ? undefined : (ref, origin) => inner.reportLoss!(ref, origin);
  }

  /** Whether the partition's marker is known to have landed (the model has no first minute: always). */
  async durablyMarked(ref: PartitionRef): Promise<boolean> {
    if (this.inner.durablyMarked === undefined) return true;
    this.#gate();
    return this.inner.durablyMarked(ref);
  }

  async claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    this.#gate();
    return this.inner.claimHead(ref, lane, expected, claim);
  }

  withLimits(): CompletionPort {
    return this;
  }

  async trackedPartitions(group: string): Promise<PartitionRef[]> {
    this.#gate();
    return this.inner.trackedPartitions(group);
  }

  async laneHeads(ref: PartitionRef): Promise<LaneHead[]> {
    this.#gate();
    return this.inner.laneHeads(ref);
  }

  async firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined> {
    this.#gate();
    return this.inner.firstParked(ref, lane);
  }
}

/** The broker as one container writes to it: acknowledged copies land in the history's logs. */
class ContainerSink implements HandOffSink {
  constructor(
    private readonly container: Container,
    private readonly land: (items: readonly HandOffItem[]) => void,
  ) {}

  async write(items: readonly HandOffItem[]): Promise<HandOffOutcome[]> {
    if (!this.container.tick()) throw new ContainerGone();
    this.land(items);
    return items.map(() => ({ status: 'written' }));
  }
}

/** One handler run, as the ghost saw it start. */
interface Run {
  readonly seq: number;
  readonly invocation: number;
  /** `source`: a processor delivery; `copy`: a retry copy; `drained`: a parked record run inline after a release. */
  readonly via: 'source' | 'copy' | 'drained';
  readonly p: number;
  readonly o: number;
  readonly attempt: number;
  /** The copy's own topic and offset. */
  readonly copy: string | undefined;
  /** When it started (the history's clock), and the committer runs so far. */
  readonly at: number;
  readonly commits: number;
  outcome: 'running' | 'ok' | 'killed' | 'hang' | FailureKind;
}

/** A retry copy in its tier's log, with the item it was written from. */
interface LoggedCopy {
  readonly record: KafkaRecordInput;
  readonly item: HandOffItem;
}

const TIERS = ['1s', '1m'] as const;
/**
 * The deployed committer's period (the plugin's `rate(1 minute)`): a drain round moves the clock to the next copy due
 * or lease expiring, and at most this far, so the recovery times the histories print are what a deployed group takes.
 */
const COMMITTER_PERIOD_MS = 60_000;
/** A drain round with nothing due or leased moves the clock this far (a committer check that takes time, e.g. `OVERDUE_HEAD_MS`). */
const IDLE_TICK_MS = 600_000;
const DRAIN_ROUNDS = 150;
const RECORD_TIMEOUT_MS = 10;
const LONG_MS = 60_000;
/** Remaining time of an invocation whose copies are not all due: it waits 2 ms, then writes them back. */
const SHORT_MS = 1_002;
const CUT_MS = 500;
/** In the drain, what a retry invocation given copies not all due leaves the due ones to start (a loaded machine). */
const DRAIN_START_MS = 250;
const STOP_MS = 1_003;

/** A retry copy's identity across its write-backs: its origin and attempt. */
function copyId(item: HandOffItem): string {
  return `${item.origin.partition}:${String(item.origin.offset)}@${item.attempt}`;
}

const silent = { logger: new Logger({ logLevel: 'SILENT' }), metrics: new Metrics({ namespace: 'test', serviceName: 'test' }) };
const optionsCache = new Map<string, LanesOptions>();

/** The options a history runs with (cached: validating them is the slow part of a small history). */
export function historyOptions(
  spec: Pick<HistorySpec, 'ordering' | 'nullKey' | 'deadLetter' | 'maxAttempts' | 'concurrency'>,
  group: string,
  recordTimeoutMs = RECORD_TIMEOUT_MS,
): LanesOptions {
  const id = JSON.stringify([spec.ordering, spec.nullKey, spec.deadLetter, spec.maxAttempts, spec.concurrency, group, recordTimeoutMs]);
  let options = optionsCache.get(id);
  if (options === undefined) {
    options = resolveOptions({
      group,
      ordering: spec.ordering,
      nullKey: spec.nullKey,
      deadLetter: { policy: spec.deadLetter },
      concurrency: spec.concurrency,
      // Flushed at the end of an invocation only (and on a crash, never): a timer firing mid-invocation would
      // make the crash points depend on the machine's speed.
      flushIntervalMs: 60_000,
      deadlineMarginMs: 1_000,
      recordTimeoutMs,
      retry: { tiers: [...TIERS], maxAttempts: spec.maxAttempts, backoff: { type: 'fixed', delayMs: 60_000 } },
    } as LanesOptionsInput, {});
    optionsCache.set(id, options);
  }
  return options;
}

function errorOf(kind: FailureKind): Error {
  switch (kind) {
    case 'transient':
      return new Error('transient failure');
    case 'soon':
      return new RetryLaterError(0);
    case 'later':
      return new RetryLaterError(5_000);
    case 'fatal':
      return new NonRetriableError('fatal failure');
    case 'bug':
      return new TypeError('bug');
  }
}

/** The dead-letter reason a failed run of `attempt` must lead to, if any (docs/ARCHITECTURE.md, "Guarantees"). */
function expectedReason(outcome: Run['outcome'], attempt: number, maxAttempts: number): string | undefined {
  if (outcome === 'fatal') return 'non-retriable';
  if (outcome === 'bug') return 'programming-error';
  if (outcome === 'transient' || outcome === 'soon' || outcome === 'later' || outcome === 'hang') {
    return attempt >= maxAttempts ? 'attempts-exhausted' : undefined;
  }
  return undefined;
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** A history broke a guarantee: the message says which, and what happened. */
export class HistoryViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HistoryViolation';
  }
}

/**
 * Runs one history on a backend and checks it; throws `HistoryViolation` on the first step that breaks a
 * guarantee, or at the end.
 *
 * @example
 * await fc.assert(fc.asyncProperty(historyArb(shape), async (spec) => {
 *   await runHistory(spec, new ModelBackend(spec.caps));
 * }), { numRuns: 500, seed: 1 });
 */
export async function runHistory(spec: HistorySpec, backend: HistoryBackend, run: RunOptions = {}): Promise<HistoryStats> {
  const history = new History(spec, backend, run);
  await history.run();
  return history.stats();
}

export interface RunOptions {
  /**
   * How long each handler takes, in ms (default: one turn of the event loop). Set, the record timeout is a minute
   * instead of 10 ms, so a history with `timeout` faults would wait that long.
   */
  readonly handlerMs?: number;
  /** Each recovery's timing is appended here (see `RecoveryTime`), for the fuzz's summary. */
  readonly recoveryTimes?: RecoveryTime[];
}

/**
 * How long a recovery took to run its records again, on the history's paced clock (real time, plus what the steps'
 * moves of the clock the system needed, plus the drain's moves: a drain round moves it until the copies waiting are due
 * and the leases expired, at most a committer period of 60 s; see `#paced`): from the loss (the first `lose` step on the partition that no
 * committer run had found) and from the committer run that found it, to the last record of the recovered range that
 * became terminal again (succeeded or dead-lettered). A recovery superseded by another before its records all ran
 * again is not counted.
 */
export interface RecoveryTime {
  /**
   * From the loss to the last record of the recovered range that ran again (its first run after the recovery), of the
   * records not waiting behind one of their lane that failed again after the recovery (that wait is the retry policy's).
   */
  readonly ranAgainMs: number;
  /** From the loss to the last record of the recovered range that became terminal again (retries included). */
  readonly sinceLossMs: number;
  readonly sinceFoundMs: number;
  /** Committer runs after the one that found the loss, up to the last record run again. */
  readonly committerRuns: number;
}

/** What a history did, to see that the generators reach the cases that matter. */
export interface HistoryStats {
  readonly invocations: number;
  /** Containers that died mid-way (invocations and committer re-drives). */
  readonly crashes: number;
  readonly runs: number;
  /** Runs of a retry copy, and of a parked record drained inline after its lane was released. */
  readonly copyRuns: number;
  readonly drainedRuns: number;
  /** Handlers that hung until their record deadline. */
  readonly hangs: number;
  /** Retry copies the broker acknowledged, and dead letters. */
  readonly copies: number;
  readonly deadLetters: number;
  /** Runs of a (record, attempt) that had run before (after a crash). */
  readonly redeliveredRuns: number;
  /** Records refused by back-pressure, held heads released by the operator, heads re-driven by the committer. */
  readonly refused: number;
  readonly operatorReleases: number;
  readonly redriven: number;
  /** `lose` steps that took state away, losses the committer found (each logged as an error), partitions recovered. */
  readonly losses: number;
  /** Of `losses`, those played while a partition had delivered records and no durable marker yet (the first minute). */
  readonly lossesUnmarked: number;
  /** Of `lossesUnmarked`, those played while a lane was held by the `hold` policy (its watch copy reports the loss). */
  readonly lossesHeld: number;
  /** Losses played while a lane was held and the partition had its durable marker (the hold goes through a recovery). */
  readonly lossesHeldMarked: number;
  /** `lanes` losses that took blocked lanes away (the lanes hash was not empty). */
  readonly lanesLost: number;
  /** Recoveries that first moved the completion group back (a first commit had passed lost records). */
  readonly rewinds: number;
  readonly lossesFound: number;
  readonly recoveries: number;
  /** Runs out of lane order while a loss stood undetected (allowed: the loss is found later). */
  readonly blindRuns: number;
  /** Source records of the histories: retry copies written per record is `copies / records`. */
  readonly records: number;
  /**
   * Copies a retry invocation wrote back with a new due time (kept for a recovery, watch copies, twins), the copies
   * (origin and attempt) that were, and the most write-backs of one copy in one history.
   */
  readonly movedWriteBacks: number;
  /** Of `movedWriteBacks`, those of a copy not due yet (a violation: counted for a comparison with older versions). */
  readonly earlyWriteBacks: number;
  readonly movedCopies: number;
  readonly maxWriteBacks: number;
}

/** Adds up the stats of many histories. */
export function addStats(a: HistoryStats, b: HistoryStats): HistoryStats {
  const sum = { ...a };
  for (const key of Object.keys(b) as Array<keyof HistoryStats>) sum[key] = key === 'maxWriteBacks' ? Math.max(a[key], b[key]) : a[key] + b[key];
  return sum;
}

export const NO_STATS: HistoryStats = {
  invocations: 0, crashes: 0, runs: 0, copyRuns: 0, drainedRuns: 0, hangs: 0, copies: 0, deadLetters: 0, redeliveredRuns: 0, refused: 0, operatorReleases: 0, redriven: 0, losses: 0, lossesUnmarked: 0, lossesHeld: 0, lossesHeldMarked: 0, lanesLost: 0, rewinds: 0, lossesFound: 0, recoveries: 0, blindRuns: 0,
  records: 0, movedWriteBacks: 0, earlyWriteBacks: 0, movedCopies: 0, maxWriteBacks: 0,
};

/** A property over one shape: `runs` random histories (the `examples` first) from a fixed seed. */
export interface HistoryCase {
  readonly shape: HistoryShape;
  readonly runs: number;
  readonly seed: number;
  /** Replays the one history at this path of fast-check's report (with the same seed). */
  readonly path?: string;
  readonly examples?: readonly HistorySpec[];
}

/**
 * Runs a case's histories, each through `run` (on a backend of its own), and adds up their stats; rejects with
 * fast-check's report (seed, path, shrunk history, trace) at the first history that breaks a guarantee.
 */
export async function assertHistories(c: HistoryCase, run: (spec: HistorySpec) => Promise<HistoryStats>): Promise<HistoryStats> {
  let stats = NO_STATS;
  await fc.assert(
    fc.asyncProperty(historyArb(c.shape), async (spec) => {
      stats = addStats(stats, await run(spec));
    }),
    { numRuns: c.runs, seed: c.seed, ...(c.path === undefined ? {} : { path: c.path }), examples: (c.examples ?? []).map((spec): [HistorySpec] => [spec]) },
  );
  return stats;
}

class History {
  readonly spec: HistorySpec;
  readonly backend: HistoryBackend;
  readonly options: LanesOptions;
  readonly laneMode: boolean;
  readonly clock: Clock;
  #skew = 0;
  /** Of `#skew`, what the steps moved the clock beyond what the system needed (see `#advance`). */
  #unpaced = 0;
  readonly sourceLogs: KafkaRecordInput[][];
  readonly tierTopics: string[];
  readonly tierLogs = new Map<string, LoggedCopy[]>();
  /** Where each trigger (source partition, retry tier) reads next. */
  readonly position = new Map<string, number>();
  /** What the committer last committed, per partition. */
  committed = new Map<string, number>();
  readonly failurePlan = new Map<string, FailureKind>();
  readonly dupWrites: Set<number>;
  #writes = 0;
  #seq = 0;
  #invocations = 0;
  crashes = 0;
  refused = 0;
  operatorReleases = 0;
  redriven = 0;
  readonly runs: Run[] = [];
  readonly successes = new Map<string, number>();
  readonly firstSuccess = new Map<string, number>();
  readonly deadLetters = new Map<string, Array<{ attempt: number; reason: string }>>();
  /** Origins of which a retry copy was acknowledged by the broker at some point. */
  readonly copied = new Set<string>();
  /** Origins released past as a lane head (their done bit set by `release`). */
  readonly released = new Set<string>();
  readonly maxAttempt = new Map<string, number>();
  /** Per lane, the runs in flight. */
  readonly inFlight = new Map<string, Set<Run>>();
  readonly violations: string[] = [];
  readonly trace: string[] = [];
  readonly handlerMs: number | undefined;
  // ---- Redis losing state (`lose` steps) ----
  losses = 0;
  lossesUnmarked = 0;
  lossesHeld = 0;
  lossesHeldMarked = 0;
  lanesLost = 0;
  rewinds = 0;
  lossesFound = 0;
  recoveries = 0;
  /** The group's keys at the start of each step, by step index (for `lose` of `writes`). */
  readonly #snapshots = new Map<number, unknown>();
  /** Source partitions that lost state no committer run has found yet: their runs may break lane order. */
  readonly #undetected = new Set<number>();
  /** Lane-order breaks seen while their partition's loss stood undetected; each must be found by the end. */
  readonly #blind: Array<{ p: number; message: string }> = [];
  #blindRuns = 0;
  /**
   * Partitions (`tpKey`) that lost state before their first durable marker: the committer's first commit may pass
   * records the lost state held (nothing durable told it otherwise) below where the marker's commits vouch from,
   * until a retry copy of one reports it and the recovery moves the completion group back (docs/durability.md).
   * With no record after the loss, nothing is there to commit: the completion group stays behind, its records all
   * terminal (checked by G1 at the end).
   */
  readonly #unmarkedLoss = new Set<string>();
  /** Source partitions the next committer run must find lost (every key was lost while they had a marker). */
  readonly #mustFind = new Set<number>();
  /** Per source partition, when Redis lost state there that no committer run has found yet (the history's clock). */
  readonly #lostAt = new Map<number, number>();
  /** Every recovery: partition, the durable frontier it read from, the run sequence then, the loss and when found. */
  readonly #recoveryLog: Array<{ p: number; from: number; seq: number; lostAt: number; foundAt: number; commits: number }> = [];
  /** Records becoming terminal (a success, a dead letter): the run sequence, the clock, the committer runs so far. */
  readonly #terminalLog: Array<{ rk: string; seq: number; at: number; commits: number; deadLetter?: boolean }> = [];
  #commits = 0;
  readonly #recoveryTimes: RecoveryTime[] | undefined;
  /** Per source partition, the last recovery: the run sequence then, and the durable frontier it read from. */
  readonly #recovered = new Map<number, { seq: number; from: number }>();
  /** What the committer logged as errors, by partition (`tpKey`), since the last committer run. */
  readonly #lossLog: string[] = [];
  readonly #telemetry: Telemetry;
  /** Partitions (`tpKey`) an invocation was given records of. */
  readonly #delivered = new Set<string>();
  /** Write-backs with a new due time of copies not due yet (each a violation). */
  #earlyWriteBacks = 0;
  /** Per copy (`copyId`), its write-backs with a new due time. */
  readonly #movedWriteBacks = new Map<string, number>();

  constructor(spec: HistorySpec, backend: HistoryBackend, run: RunOptions) {
    this.spec = spec;
    this.backend = backend;
    this.handlerMs = run.handlerMs;
    this.#recoveryTimes = run.recoveryTimes;
    this.options = historyOptions(spec, backend.group, run.handlerMs === undefined ? RECORD_TIMEOUT_MS : 60_000);
    this.laneMode = spec.ordering !== 'unordered';
    this.clock = { now: () => Date.now() + this.#skew };
    this.sourceLogs = spec.keys.map((keys, p) => keys.map((key, o) => ({
      topic: backend.source,
      partition: p,
      offset: o,
      timestamp: 1_700_000_000_000 + o,
      key: key === null ? null : Buffer.from(key),
      value: Buffer.from(spec.badValues.some((b) => b.p === p && b.o === o) ? `not json ${p}:${o}` : JSON.stringify({ p, o })),
    })));
    this.tierTopics = TIERS.map((tier) => retryTopic(backend.group, tier));
    for (const topic of this.tierTopics) this.tierLogs.set(topic, []);
    for (const f of spec.failures) {
      const id = `${f.p}:${f.o}:${f.attempt}`;
      if (!this.failurePlan.has(id)) this.failurePlan.set(id, f.kind);
    }
    this.dupWrites = new Set(spec.dupWrites);
    // The committer's error log, as an operator reads it: each loss it finds must be there.
    const logger = new Logger({ logLevel: 'SILENT' });
    const error = logger.error.bind(logger);
    logger.error = (input: unknown, ...extra: unknown[]): void => {
      const fields = extra.find((x): x is { topic: string; partition: number } => typeof x === 'object' && x !== null && 'topic' in x);
      if (fields !== undefined) this.#lossLog.push(tpKey(fields.topic, fields.partition));
      error(input as string, ...(extra as []));
    };
    this.#telemetry = { logger, metrics: silent.metrics };
    if (spec.steps.some((step) => step.t === 'lose') && backend.losses === undefined) throw new Error('this backend cannot lose state: a history with `lose` steps needs one that can');
  }

  stats(): HistoryStats {
    const seen = new Set<string>();
    let redeliveredRuns = 0;
    for (const r of this.runs) {
      const id = `${r.p}:${r.o}:${r.attempt}`;
      if (seen.has(id)) redeliveredRuns += 1;
      seen.add(id);
    }
    return {
      invocations: this.#invocations,
      crashes: this.crashes,
      runs: this.runs.length,
      copyRuns: this.runs.filter((r) => r.via === 'copy').length,
      drainedRuns: this.runs.filter((r) => r.via === 'drained').length,
      hangs: this.runs.filter((r) => r.outcome === 'hang').length,
      copies: [...this.tierLogs.values()].reduce((n, log) => n + log.length, 0),
      deadLetters: [...this.deadLetters.values()].reduce((n, list) => n + list.length, 0),
      redeliveredRuns,
      refused: this.refused,
      operatorReleases: this.operatorReleases,
      redriven: this.redriven,
      losses: this.losses,
      lossesUnmarked: this.lossesUnmarked,
      lossesHeld: this.lossesHeld,
      lossesHeldMarked: this.lossesHeldMarked,
      lanesLost: this.lanesLost,
      rewinds: this.rewinds,
      lossesFound: this.lossesFound,
      recoveries: this.recoveries,
      blindRuns: this.#blindRuns,
      records: this.sourceLogs.reduce((n, log) => n + log.length, 0),
      movedWriteBacks: [...this.#movedWriteBacks.values()].reduce((n, c) => n + c, 0),
      earlyWriteBacks: this.#earlyWriteBacks,
      movedCopies: this.#movedWriteBacks.size,
      maxWriteBacks: Math.max(0, ...this.#movedWriteBacks.values()),
    };
  }

  // ---- lanes of the ghost ----

  keyOf(p: number, o: number): string | null {
    return this.spec.keys[p]?.[o] ?? null;
  }

  /** The lane of a source record as docs/ARCHITECTURE.md, "Words", defines it; `undefined`: independent. */
  laneOf(p: number, o: number): string | undefined {
    if (this.spec.ordering === 'unordered') return undefined;
    if (this.spec.ordering === 'partition') return `${p}`;
    const key = this.keyOf(p, o);
    if (key === null) return this.spec.nullKey === 'shared' ? `${p}/(null)` : undefined;
    return `${p}/${key}`;
  }

  /** The lane ids the store uses for a partition (park lists are read through them). */
  storeLanes(p: number): string[] {
    if (this.spec.ordering === 'partition') return ['*'];
    const keys = new Set((this.spec.keys[p] ?? []).filter((k): k is string => k !== null));
    return [...[...keys].map((k) => Buffer.from(k).toString('base64')), ...(this.spec.nullKey === 'shared' ? ['~'] : [])];
  }

  terminal(rk: string): boolean {
    return (this.successes.get(rk) ?? 0) > 0 || (this.deadLetters.get(rk)?.length ?? 0) > 0;
  }

  /**
   * Terminal as far as its lane is concerned: under `hold`, a dead-lettered head keeps its lane blocked until an
   * operator releases it (skipped by an explicit policy).
   */
  laneTerminal(rk: string): boolean {
    if ((this.successes.get(rk) ?? 0) > 0) return true;
    if ((this.deadLetters.get(rk)?.length ?? 0) === 0) return false;
    return this.spec.deadLetter === 'release' || this.released.has(rk);
  }

  violate(message: string): void {
    this.violations.push(message);
    this.trace.push(`!! ${message}`);
  }

  // ---- the history ----

  async run(): Promise<void> {
    const snapshots = this.spec.steps.some((step) => step.t === 'lose' && step.what === 'writes');
    for (const [i, step] of this.spec.steps.entries()) {
      this.trace.push(`step ${i}: ${JSON.stringify(step)}`);
      if (snapshots && this.backend.losses !== undefined) {
        this.#snapshots.set(i, await this.backend.losses.snapshot());
        this.#snapshots.delete(i - 4);
      }
      await this.#step(step, i);
      const next = this.spec.steps[i + 1];
      if (next?.t === 'lose' && next.uncommitted) this.trace.push('  (no committer run before the loss)');
      else if ('quiet' in step && step.quiet === true) this.trace.push('  (no committer run after this step)');
      else await this.#commitAndCheck();
      this.#throwIfViolated(`after step ${i}`);
    }
    this.trace.push('drain');
    await this.#drain();
    this.#throwIfViolated('while draining');
    await this.#finalChecks();
    this.#timeRecoveries();
    if (process.env.HISTORY_TRACE === '1') console.log(this.trace.join('\n'));
    this.#throwIfViolated('at the end');
  }

  #throwIfViolated(when: string): void {
    if (this.violations.length === 0) return;
    const trace = this.trace.length > 150 && process.env.HISTORY_FULL !== "1" ? ['…', ...this.trace.slice(-150)] : this.trace;
    throw new HistoryViolation(`${when}:\n  ${this.violations.join('\n  ')}\ntrace:\n  ${trace.join('\n  ')}`);
  }

  async #step(step: Step, index: number): Promise<void> {
    switch (step.t) {
      case 'lose':
        return this.#lose(step, index);
      case 'deliver':
        return this.#deliver(step);
      case 'retry':
        await this.#advance(step.advanceMs, 'retry');
        return this.#retry(step);
      case 'both':
        await this.#advance(step.retry.advanceMs, 'retry');
        await Promise.all([this.#deliver(step.deliver), this.#retry(step.retry)]);
        return;
      case 'commit':
        await this.#advance(step.advanceMs, 'commit');
        return this.#redrive(step.crashAfter === undefined ? undefined : { kind: 'crash', after: step.crashAfter });
      case 'rewind':
        if (step.what === 'source') {
          this.sourceLogs.forEach((_, p) => this.position.set(tpKey(this.backend.source, p), this.committed.get(tpKey(this.backend.source, p)) ?? 0));
        } else {
          for (const topic of this.tierTopics) this.position.set(tpKey(topic, 0), this.committed.get(tpKey(topic, 0)) ?? 0);
        }
        this.trace.push(`  positions ${JSON.stringify([...this.position])}`);
        return;
      case 'operator':
        return this.#releaseHeld();
    }
  }

  /** Redis loses state: what it lost stands undetected on the partitions it touched until a committer run finds it. */
  async #lose(step: LoseStep, index: number): Promise<void> {
    const losses = this.backend.losses!;
    this.#mustFind.clear();
    const all = this.sourceLogs.map((_, p) => p);
    // Before the committer's first commit of a partition no marker tells what Redis held: a loss then is found by a
    // copy of a lost lane head (a retry, deferred or watch copy) reporting it (docs/durability.md, "The first minute").
    const unmarked = [...this.#delivered].filter((key) => {
      const cut = key.lastIndexOf('-');
      return !losses.hasMarker(key.slice(0, cut), Number(key.slice(cut + 1)));
    });
    const heldOn = this.spec.deadLetter === 'hold' ? [...this.deadLetters.keys()].map((rk) => tpKey(this.backend.source, Number(rk.split(':')[0]))) : [];
    if (heldOn.some((key) => !unmarked.includes(key))) this.lossesHeldMarked += 1;
    if (unmarked.length > 0) {
      this.lossesUnmarked += 1;
      if (heldOn.some((key) => unmarked.includes(key))) this.lossesHeld += 1;
      this.trace.push(`  (${unmarked.join(', ')} have no durable marker yet)`);
      for (const key of unmarked) this.#unmarkedLoss.add(key);
    }
    let touched: number[] = all;
    if (step.what === 'lanes') {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: 0 };
      if (await losses.loseLanes(ref)) this.lanesLost += 1;
      this.trace.push('  Redis lost the lanes hash of partition 0');
      touched = [0];
    } else if (step.what === 'key') {
      const lost = await losses.loseKey(step.pick);
      if (lost === undefined) return;
      this.trace.push(`  Redis lost ${lost.key}`);
      touched = lost.partition === undefined ? [] : lost.partition.topic === this.backend.source ? [lost.partition.partition] : [];
    } else {
      const snapshot = step.what === 'writes' ? this.#snapshots.get(index - step.back) : undefined;
      await losses.restore(snapshot);
      this.trace.push(snapshot === undefined ? '  Redis lost every key of the group' : `  Redis lost every write since the start of step ${index - step.back}`);
      if (snapshot === undefined) {
        for (const p of all) if (losses.hasMarker(this.backend.source, p)) this.#mustFind.add(p);
      }
    }
    this.losses += 1;
    for (const p of touched) {
      this.#undetected.add(p);
      if (!this.#lostAt.has(p)) this.#lostAt.set(p, this.#paced());
    }
  }

  /** The operator releases every held lane of the source partitions. */
  async #releaseHeld(): Promise<void> {
    const container = new Container(undefined);
    const invocation = (this.#invocations += 1);
    const parts = { options: this.options, store: this.#storeOf(container) as unknown as CompletionStore, sink: this.#sinkOf(container, invocation), now: this.clock.now };
    for (const p of this.sourceLogs.keys()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      for (const head of await this.backend.store.laneHeads(ref)) {
        if (head.state !== 'held') continue;
        const { next } = await releaseHeldLane(parts, ref, head.lane);
        this.operatorReleases += 1;
        this.trace.push(`  #${invocation} operator released held ${p}:${head.offset}, next ${String(next)}`);
      }
    }
  }

  async #deliver(step: DeliverStep): Promise<void> {
    const partitions = step.partition === 'all' ? this.sourceLogs.map((_, p) => p) : [step.partition];
    const batches = partitions.flatMap((p) => {
      const log = this.sourceLogs[p] ?? [];
      const key = tpKey(this.backend.source, p);
      const start = Math.max(0, (this.position.get(key) ?? 0) - step.back);
      const end = Math.min(log.length, start + step.size);
      return start < end ? [{ key, start, end, records: log.slice(start, end) }] : [];
    });
    if (batches.length === 0) return;
    await this.#invoke('processor', batches, step.fault);
  }

  async #retry(step: RetryStep): Promise<void> {
    const topics = step.order === 'desc' ? [...this.tierTopics].reverse() : this.tierTopics;
    const batches = topics.flatMap((topic) => {
      const log = this.tierLogs.get(topic) ?? [];
      const key = tpKey(topic, 0);
      const start = Math.max(0, (this.position.get(key) ?? 0) - step.back);
      const end = Math.min(log.length, start + step.size);
      return start < end ? [{ key, start, end, records: log.slice(start, end).map((c) => c.record) }] : [];
    });
    // One invocation per tier (one trigger each); the fault hits the first.
    const one = (batch: (typeof batches)[number], i: number): Promise<void> => this.#invoke('retry', [batch], i === 0 ? step.fault : { kind: 'none' }, i === 0 ? step.during : undefined);
    if (step.order === 'parallel') {
      await Promise.all(batches.map(one));
      return;
    }
    for (const [i, batch] of batches.entries()) await one(batch, i);
  }

  /** The committer's re-drive of lane heads whose lease expired. */
  async #redrive(fault: Fault | undefined): Promise<void> {
    const container = new Container(fault);
    const invocation = (this.#invocations += 1);
    try {
      this.redriven += (await redriveExpiredLeases({
        store: this.#storeOf(container),
        options: this.options,
        sink: this.#sinkOf(container, invocation),
        now: this.clock.now,
      })).length;
    } catch (error) {
      if (!container.dead) throw error;
    }
    if (container.dead) {
      this.crashes += 1;
      this.trace.push(`  re-drive #${invocation} crashed`);
    }
  }

  #storeOf(container: Container): ContainerStore {
    return new ContainerStore(this.backend.store, container, (ref, offset) => {
      if (ref.topic === this.backend.source) this.released.add(`${ref.partition}:${offset}`);
    });
  }

  /**
   * `taken`: the copies a retry invocation was given, by their topic and offset. A copy
   * written back with another due time (kept for a recovery, a watch copy, a twin waiting for a claim) is counted, and
   * must have been due when it was: a copy taken before its due time goes back to its tier unchanged (G4, and
   * docs/durability.md: a kept copy is written back at most once per recheck interval).
   */
  #sinkOf(container: Container, invocation: number, taken?: ReadonlyMap<string, HandOffItem>): ContainerSink {
    return new ContainerSink(container, (items) => {
      for (const item of items) {
        // A write-back is built from the copy as read (its own topic and offset), with the same attempt.
        const from = item.kind === 'retry' ? taken?.get(`${item.record.topic}@${item.record.offset}`) : undefined;
        if (from !== undefined && from.attempt === item.attempt && from.dueAtMs !== item.dueAtMs) {
          const due = from.dueAtMs;
          this.#movedWriteBacks.set(copyId(item), (this.#movedWriteBacks.get(copyId(item)) ?? 0) + 1);
          if (this.clock.now() < due) {
            this.#earlyWriteBacks += 1;
            this.violate(`#${invocation} wrote ${copyId(item)} back due +${item.dueAtMs - this.clock.now()}ms, ${due - this.clock.now()} ms before the copy it was given was due: a copy not due goes back unchanged`);
          }
        }
        const ordinal = this.#writes;
        this.#writes += 1;
        const rk = `${item.origin.partition}:${item.origin.offset}`;
        if (item.kind === 'dead-letter') {
          if (item.origin.topic !== this.backend.source) {
            this.violate(`#${invocation} dead-lettered a record whose origin is not a source record: ${JSON.stringify(item.origin)} (${item.reason})`);
          }
          const list = this.deadLetters.get(rk) ?? [];
          list.push({ attempt: item.attempt, reason: item.reason ?? '' });
          this.deadLetters.set(rk, list);
          this.#terminalLog.push({ rk, seq: this.#seq, at: this.#paced(), commits: this.#commits, deadLetter: true });
          this.trace.push(`  #${invocation} dead letter ${rk} attempt ${item.attempt}: ${item.reason}`);
          continue;
        }
        this.copied.add(rk);
        const log = this.tierLogs.get(item.topic);
        if (log === undefined) {
          this.violate(`#${invocation} wrote a retry copy to an unknown topic ${item.topic}`);
          continue;
        }
        const copies = this.dupWrites.has(ordinal) ? 2 : 1;
        for (let i = 0; i < copies; i += 1) log.push({ record: copyRecord(item, log.length), item });
        this.trace.push(`  #${invocation} copy ${rk} attempt ${item.attempt} due +${item.dueAtMs - this.clock.now()}ms -> ${item.topic}@${log.length - copies}${copies > 1 ? ' (twice)' : ''}${item.deferred === true ? ' deferred' : ''}`);
      }
    });
  }

  /** One invocation of the processor or the retry function, in a container of its own. */
  async #invoke(
    kind: 'processor' | 'retry',
    batches: ReadonlyArray<{ key: string; start: number; end: number; records: KafkaRecordInput[] }>,
    fault: Fault,
    during?: RetryStep['during'],
    /** With copies not all due: how long the due ones have to start, beyond `SHORT_MS`'s 2 ms. */
    startWindowMs?: number,
  ): Promise<void> {
    const invocation = (this.#invocations += 1);
    const container = new Container(fault);
    const records = batches.flatMap((b) => b.records);
    for (const r of records) this.#delivered.add(tpKey(r.topic, r.partition));
    this.trace.push(`  #${invocation} ${kind} ${batches.map((b) => `${b.key}[${b.start},${b.end})`).join(' ')} fault ${JSON.stringify(fault)}`);
    // G7: what was done before the invocation must not run in it.
    const doneBefore = new Set<string>();
    for (const b of batches) {
      const first = b.records[0]!;
      const ref = { group: this.backend.group, topic: first.topic, partition: first.partition };
      for (const o of await this.backend.doneOffsets(ref, b.records.map((r) => r.offset))) doneBefore.add(tpKey(first.topic, first.partition) + `@${o}`);
    }
    let remainingMs = LONG_MS;
    if (fault.kind === 'cut') remainingMs = CUT_MS;
    else if (fault.kind === 'timeout' && fault.stop) remainingMs = STOP_MS;
    else if (kind === 'retry' && batches.some((b) => this.#tierSlice(b).some((c) => c.item.dueAtMs > this.clock.now()))) remainingMs = SHORT_MS + (startWindowMs ?? 0);

    const taken = new Map<string, HandOffItem>();
    if (kind === 'retry') {
      for (const c of batches.flatMap((b) => this.#tierSlice(b))) taken.set(`${c.record.topic}@${c.record.offset}`, c.item);
    }
    const engine = new Engine({
      options: this.options,
      handler: this.#handler(kind, invocation, container, doneBefore, during),
      store: this.#storeOf(container),
      telemetry: silent,
      clock: this.clock,
    });
    // Decoded as the function decodes an event: a record when its chunk is admitted.
    const decoded = decodeKafkaEventLazily(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
    const admission: RecordPath<EngineTask> = kind === 'processor' ? new SourcePath() : new RetryPath() as unknown as RecordPath<EngineTask>;
    let response: KafkaBatchResponse | undefined;
    let thrown: unknown;
    try {
      response = await engine.run(admission, decoded.partitions, this.#sinkOf(container, invocation, taken), within(remainingMs));
    } catch (error) {
      thrown = error;
    }
    if (container.dead) {
      this.crashes += 1;
      this.trace.push(`  #${invocation} crashed: the trigger delivers the batch again`);
      return;
    }
    const failed = response?.batchItemFailures ?? [];
    // Only back-pressure may leave records unhandled without a crash: the trigger delivers them again (G5).
    if (thrown !== undefined || (failed.length > 0 && this.spec.caps === undefined)) {
      this.violate(`#${invocation} (${kind}, no crash) did not hand every record off: ${thrown === undefined ? JSON.stringify(response) : String(thrown)}`);
      return;
    }
    if (failed.length > 0) {
      this.refused += failed.length;
      this.trace.push(`  #${invocation} refused ${JSON.stringify(failed.map((f) => f.itemIdentifier))}`);
    }
    for (const b of batches) {
      const refused = failed.filter((f) => f.itemIdentifier.partition === b.key).map((f) => f.itemIdentifier.offset);
      this.position.set(b.key, refused.length > 0 ? Math.min(...refused) : b.end);
    }
  }

  #tierSlice(b: { key: string; start: number; end: number }): LoggedCopy[] {
    const topic = b.key.slice(0, b.key.lastIndexOf('-'));
    return (this.tierLogs.get(topic) ?? []).slice(b.start, b.end);
  }

  /** The user's handler, as the ghost watches it: checks at every start, outcome as planned. */
  #handler(kind: 'processor' | 'retry', invocation: number, container: Container, doneBefore: ReadonlySet<string>, during?: RetryStep['during']): RecordHandler {
    let starts = 0;
    return async (record, ctx) => {
      const { alive, hang } = container.start();
      if (!alive) throw new ContainerGone();
      starts += 1;
      if (during !== undefined && starts === during.start) {
        this.trace.push(`  (while #${invocation} starts ${record.origin.partition}:${record.origin.offset}: a committer run, a loss, a committer run)`);
        await this.#commitAndCheck();
        await this.#lose({ t: 'lose', what: during.what, back: 1, pick: 0, uncommitted: false }, -1);
        await this.#commitAndCheck();
      }
      const via: Run['via'] = kind === 'processor' ? 'source' : retryTierOf(this.backend.group, record.topic) === undefined ? 'drained' : 'copy';
      const run: Run = {
        seq: (this.#seq += 1),
        invocation,
        via,
        p: record.origin.partition,
        o: record.origin.offset,
        attempt: ctx.attempt,
        copy: via === 'copy' ? `${record.topic}@${record.offset}` : undefined,
        at: this.#paced(),
        commits: this.#commits,
        outcome: 'running',
      };
      this.#checkStart(run, record, doneBefore);
      this.runs.push(run);
      this.trace.push(`  #${invocation} run ${run.p}:${run.o} (${String(this.keyOf(run.p, run.o))}) attempt ${run.attempt} via ${via}${run.copy === undefined ? '' : ` ${run.copy}`}`);
      return this.#execute(run, ctx, container, hang);
    };
  }

  #checkStart(run: Run, record: LanesRecord, doneBefore: ReadonlySet<string>): void {
    const { p, o, attempt } = run;
    const rk = `${p}:${o}`;
    const what = `${rk} (key ${String(this.keyOf(p, o))}) attempt ${attempt} via ${run.via}${run.copy === undefined ? '' : ` ${run.copy}`}`;
    if (record.origin.topic !== this.backend.source || o >= (this.spec.keys[p]?.length ?? 0)) this.violate(`ran a record of unknown origin ${JSON.stringify(record.origin)}`);
    // G4: attempts per record never exceed maxAttempts.
    if (attempt < 1 || attempt > this.spec.maxAttempts) this.violate(`${what}: attempt outside 1..${this.spec.maxAttempts}`);
    // G7: a record whose done bit is set is never run again when it is redelivered.
    if (run.via === 'source' && doneBefore.has(`${tpKey(record.topic, record.partition)}@${record.offset}`)) {
      this.violate(`${what}: ran although its done bit was set when the batch was delivered (G7)`);
    }
    if (run.via === 'copy' && doneBefore.has(`${tpKey(record.topic, record.partition)}@${record.offset}`)) {
      this.violate(`${what}: a copy ran again although its own done bit was set when it was redelivered (G7)`);
    }
    // G4: a retry never runs before its due time.
    if (run.via === 'copy') {
      const due = readHandOffHeaders(record.headers).dueAtMs;
      if (due === undefined || this.clock.now() < due) this.violate(`${what}: ran ${due === undefined ? 'without a due time' : `${due - this.clock.now()} ms before its due time`} (G4)`);
    }
    const lane = this.laneOf(p, o);
    // While its partition's lost state stands undetected, a record may run out of lane order, and an older attempt
    // may run again (at-least-once); the loss must be found by the end, or those breaks count (see `#lose`).
    const blind = this.#undetected.has(p);
    const order = (message: string): void => {
      if (!blind) {
        this.violate(message);
        return;
      }
      this.#blind.push({ p, message });
      this.#blindRuns += 1;
      this.trace.push(`  (blind: ${message})`);
    };
    if (this.laneMode && lane !== undefined) {
      // Key / partition mode: a record starts only after every earlier record of its lane is terminal.
      for (let m = 0; m < o; m += 1) {
        if (this.laneOf(p, m) === lane && !this.laneTerminal(`${p}:${m}`)) {
          order(`${what}: started while ${p}:${m} of its lane ${lane} is neither done nor dead-lettered${this.spec.deadLetter === 'hold' ? ' and released' : ''}`);
        }
      }
      // One record per lane in flight.
      const running = [...(this.inFlight.get(lane) ?? [])];
      if (running.length > 0) {
        order(`${what}: started while ${running.map((r) => `${r.p}:${r.o} attempt ${r.attempt} via ${r.via}${r.copy === undefined ? '' : ` ${r.copy}`} (#${r.invocation})`).join(', ')} of lane ${lane} is running`);
      }
      // A stale copy (an older attempt, or a head its lane was released past) never runs.
      if (!blind && this.released.has(rk)) this.violate(`${what}: ran after its lane was released past it (stale)`);
      const max = this.maxAttempt.get(rk) ?? 0;
      if (!blind && attempt < max) this.violate(`${what}: ran after attempt ${max} of it had started (stale)`);
    }
    this.maxAttempt.set(rk, Math.max(attempt, this.maxAttempt.get(rk) ?? 0));
  }

  async #execute(run: Run, ctx: LanesContext, container: Container, hang: boolean): Promise<void> {
    const rk = `${run.p}:${run.o}`;
    const lane = this.laneMode ? this.laneOf(run.p, run.o) : undefined;
    if (lane !== undefined) {
      const running = this.inFlight.get(lane) ?? new Set<Run>();
      running.add(run);
      this.inFlight.set(lane, running);
    }
    // At its record deadline the engine counts a run as failed and moves on, the handler going on detached
    // (at-least-once allows it): from then on the ghost counts it as a run that hung, out of its lane. A loaded
    // machine may take the whole deadline (10 ms) for a turn of the event loop, so any run may end this way.
    const timedOut = (): void => {
      if (run.outcome === 'running' || run.outcome === 'hang') run.outcome = 'hang';
      if (lane !== undefined) this.inFlight.get(lane)?.delete(run);
    };
    ctx.signal.addEventListener('abort', timedOut, { once: true });
    try {
      if (hang) {
        run.outcome = 'hang';
        await aborted(ctx.signal);
      }
      // A turn of the event loop, as a handler's I/O takes: the other records of the invocation, and the other
      // invocations of the step, go on meanwhile (runs overlap, so one record per lane in flight is checked).
      await new Promise<void>((resolve) => (this.handlerMs === undefined ? setImmediate(resolve) : setTimeout(resolve, this.handlerMs)));
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const key = this.keyOf(run.p, run.o);
      const failure: FailureKind | undefined = key !== null && key === this.spec.poison ? 'transient' : this.failurePlan.get(`${rk}:${run.attempt}`);
      if (failure !== undefined) {
        run.outcome = failure;
        throw errorOf(failure);
      }
      if (container.dead) {
        run.outcome = 'killed';
        throw new ContainerGone();
      }
      run.outcome = 'ok';
      this.successes.set(rk, (this.successes.get(rk) ?? 0) + 1);
      this.#terminalLog.push({ rk, seq: run.seq, at: this.#paced(), commits: this.#commits });
      if (!this.firstSuccess.has(rk)) this.firstSuccess.set(rk, run.seq);
    } finally {
      ctx.signal.removeEventListener('abort', timedOut);
      if (lane !== undefined) this.inFlight.get(lane)?.delete(run);
    }
  }

  // ---- commits and checks ----

  /** A committer run after every step; G2 on every source partition. */
  async #commitAndCheck(): Promise<void> {
    const container = new Container(undefined);
    const invocation = (this.#invocations += 1);
    this.#lossLog.length = 0;
    this.#commits += 1;
    const { committed, losses } = await this.backend.commit(this.clock.now(), {
      source: this.#recordLog(),
      sink: this.#sinkOf(container, invocation),
      options: this.options,
      telemetry: this.#telemetry,
      delivered: async (topics) => [...this.position].flatMap(([key, offset]) => {
        const cut = key.lastIndexOf('-');
        const topic = key.slice(0, cut);
        return topics.includes(topic) ? [{ topic, partition: Number(key.slice(cut + 1)), offset }] : [];
      }),
    });
    this.#afterLosses(losses);
    for (const [key, before] of this.committed) {
      const now = committed.get(key);
      // The one move back: to where a retry copy proved a commit made before any marker passed lost records.
      const rewound = losses.some((loss) => tpKey(loss.topic, loss.partition) === key && loss.rewoundTo === now && this.#unmarkedLoss.has(key));
      if ((now ?? -1) < before && !rewound) this.violate(`committed offset of ${key} went back from ${before} to ${String(now)} (G2)`);
      if (rewound) this.rewinds += 1;
      if (rewound) this.trace.push(`  committed offset of ${key} moved back from ${before} to ${String(now)}`);
    }
    this.committed = committed;
    for (const [p, log] of this.sourceLogs.entries()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      const c = committed.get(tpKey(ref.topic, p));
      if (c === undefined) continue;
      if (c > log.length) this.violate(`committed ${c} on partition ${p} is past the last record ${log.length - 1}`);
      const parked = await this.backend.parkedOffsets(ref, this.storeLanes(p));
      // Lost before the first marker: what the first commit passed below where its marker vouches from is found
      // again when a retry copy of it reports (checked at the end: every record terminal, G1).
      const unvouched = this.#unmarkedLoss.has(tpKey(ref.topic, p)) ? (this.backend.losses?.markerSince(ref.topic, p) ?? 0) : 0;
      for (let o = unvouched; o < Math.min(c, log.length); o += 1) {
        const rk = `${p}:${o}`;
        // G2: below the committed offset, every record is terminal or handed off (a retry copy acknowledged, or parked in Redis).
        // Durable: Redis is no hand-off; a record of a lane is handed off by being terminal (its lane head blocks the commit).
        if (this.backend.durable) {
          if (!this.terminal(rk) && !(this.copied.has(rk) && this.laneOf(p, o) === undefined)) {
            this.violate(`committed ${c} on partition ${p} passes ${rk}, which is neither done, dead-lettered nor an independent record handed off to a retry topic (G2 against the durable completion group)`);
          }
          continue;
        }
        if (!this.terminal(rk) && !this.copied.has(rk) && !parked.has(o)) {
          this.violate(`committed ${c} on partition ${p} passes ${rk}, which is neither done, dead-lettered, handed off to a retry topic nor parked (G2)`);
        }
      }
    }
    this.trace.push(`  committed ${JSON.stringify([...committed])}`);
  }

  /** The history's source log as a recovery reads it from Kafka. */
  #recordLog(): RecordLog {
    const logOf = (topic: string, partition: number): KafkaRecordInput[] =>
      topic === this.backend.source ? (this.sourceLogs[partition] ?? []) : (this.tierLogs.get(topic) ?? []).map((c) => c.record);
    return {
      offsets: async (topic, partition) => ({ low: 0, end: logOf(topic, partition).length }),
      read: async (topic, partition, from, end) => {
        const records = logOf(topic, partition).slice(from, end);
        return records.length === 0 ? [] : decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records })).partitions[0]!.records;
      },
    };
  }

  /** What a committer run found lost: logged, and from then on the partition's runs are held to lane order again. */
  #afterLosses(losses: readonly LossFound[]): void {
    const found = new Set<number>();
    for (const loss of losses) {
      this.lossesFound += 1;
      const key = tpKey(loss.topic, loss.partition);
      this.trace.push(`  committer found ${key} lost (${loss.reason})${loss.recoveredFrom === undefined ? `, not recovered: ${String(loss.error)}` : `, recovered from ${loss.recoveredFrom}`}`);
      if (!this.#lossLog.includes(key)) this.violate(`the committer found ${key} lost (${loss.reason}) but logged no error naming it`);
      if (loss.topic !== this.backend.source) continue;
      const p = loss.partition;
      found.add(p);
      // A loss in the first minute whose records a commit made before any marker passed stays undetected while this
      // recovery starts above one of them that is not terminal, or (`hold`) that holds its lane: only its copy (a
      // retry or watch copy) reports it, later (a second recovery, moving the completion group back;
      // docs/durability.md, "Known limits"). Until then its lane may run ahead.
      const below = this.#unmarkedLoss.has(key) && loss.recoveredFrom !== undefined &&
        Array.from({ length: Math.min(loss.recoveredFrom, this.sourceLogs[p]?.length ?? 0) }, (_, o) => o).some((o) => !this.laneTerminal(`${p}:${o}`));
      const lostAt = this.#lostAt.get(p) ?? this.#paced();
      if (below) this.trace.push(`  (records of ${key} below ${String(loss.recoveredFrom)} are not terminal or hold their lane: their first-minute loss is not found yet)`);
      else {
        this.#lostAt.delete(p);
        this.#undetected.delete(p);
        for (let i = this.#blind.length - 1; i >= 0; i -= 1) if (this.#blind[i]!.p === p) this.#blind.splice(i, 1);
      }
      if (loss.recoveredFrom === undefined) continue;
      this.recoveries += 1;
      const from = loss.recoveredFrom;
      this.#recoveryLog.push({ p, from, seq: this.#seq, lostAt, foundAt: this.#paced(), commits: this.#commits });
      this.#recovered.set(p, { seq: this.#seq, from });
      // Every record from the durable frontier on runs again from its first attempt.
      for (let o = from; o < (this.sourceLogs[p]?.length ?? 0); o += 1) {
        this.maxAttempt.delete(`${p}:${o}`);
        this.released.delete(`${p}:${o}`);
      }
    }
    for (const p of this.#mustFind) {
      if (!found.has(p)) this.violate(`Redis lost every key of the group while partition ${p} had a durable marker, and the committer did not find it`);
    }
    this.#mustFind.clear();
  }

  async #settled(): Promise<boolean> {
    const caughtUp = (key: string, end: number): boolean => (this.committed.get(key) ?? 0) === end || (this.#unmarkedLoss.has(key) && this.position.get(key) === end);
    for (const [p, log] of this.sourceLogs.entries()) {
      const key = tpKey(this.backend.source, p);
      if (!caughtUp(key, log.length) || (this.#unmarkedLoss.has(key) && log.some((_, o) => !this.terminal(`${p}:${o}`)))) return false;
      // Every record terminal after a first-minute loss, yet a lane may stay blocked: an older snapshot restored on
      // a partition the tracked set no longer names (lost with the rest, and re-added only by an admit a minute
      // later) keeps a head whose run succeeded. Nothing is lost; the next record of that lane re-tracks the partition
      // and the committer's overdue-head check recovers it (docs/durability.md, "Recovery, without an operator").
      if (this.#unmarkedLoss.has(key)) continue;
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      if ((await this.backend.blockedLanes(ref)) > 0 || (await this.backend.parkedOffsets(ref, this.storeLanes(p))).size > 0) return false;
    }
    return this.tierTopics.every((topic) => caughtUp(tpKey(topic, 0), this.tierLogs.get(topic)?.length ?? 0));
  }

  /**
   * Deliver what each trigger has not delivered yet, source and tiers, until nothing is left. A trigger goes on
   * from its own position (the event source never goes back by itself): a record Redis lost after its delivery
   * comes back only through a recovery.
   */
  async #drain(): Promise<void> {
    for (let round = 0; round < DRAIN_ROUNDS; round += 1) {
      this.#skew += await this.#drainTick();
      await this.#releaseHeld();
      await this.#redrive(undefined);
      await this.#commitAndCheck();
      if (await this.#settled()) return;
      const source = this.sourceLogs.flatMap((log, p) => {
        const key = tpKey(this.backend.source, p);
        const start = this.position.get(key) ?? 0;
        return start < log.length ? [{ key, start, end: log.length, records: log.slice(start) }] : [];
      });
      if (source.length > 0) await this.#invoke('processor', source, { kind: 'none' });
      await this.#commitAndCheck();
      for (const topic of this.tierTopics) {
        const log = this.tierLogs.get(topic) ?? [];
        const key = tpKey(topic, 0);
        const start = this.position.get(key) ?? 0;
        // The retry function runs the copies due at once and would wait for the others, which the rig's clock does
        // between rounds instead: they go back to their tier unchanged, after the due ones had time to start.
        if (start < log.length) await this.#invoke('retry', [{ key, start, end: log.length, records: log.slice(start).map((c) => c.record) }], { kind: 'none' }, undefined, DRAIN_START_MS);
      }
      if (this.violations.length > 0) return;
    }
    const open = this.sourceLogs.flatMap((log, p) => log.map((_, o) => `${p}:${o}`)).filter((rk) => !this.terminal(rk));
    this.violate(`never settles: after ${DRAIN_ROUNDS} rounds committed is ${JSON.stringify([...this.committed])}, logs ${JSON.stringify([...this.tierLogs].map(([t, l]) => [t, l.length]))}; neither completed nor dead-lettered: ${open.join(', ') || 'none'}`);
  }

  /**
   * The clock as the recovery times read it (`RecoveryTime`): a step's move of the clock stands for the pace the
   * history chose for its triggers, so only what the system needed of it counts: for a retry delivery, until the
   * earliest copy waiting in a tier is due; for a committer run, until the earliest lease of a lane head expired,
   * rounded up to a committer period (the committer runs once a period). The drain's moves count whole.
   */
  #paced(): number {
    return this.clock.now() - this.#unpaced;
  }

  async #advance(ms: number, what: 'retry' | 'commit'): Promise<void> {
    const now = this.clock.now();
    let needed: number;
    if (what === 'retry') {
      const dues = this.tierTopics.flatMap((topic) => (this.tierLogs.get(topic) ?? []).slice(this.position.get(tpKey(topic, 0)) ?? 0).map((c) => c.item.dueAtMs - now));
      needed = dues.length === 0 ? 0 : Math.max(0, Math.min(...dues));
    } else {
      const leases: number[] = [];
      for (const p of this.sourceLogs.keys()) {
        for (const head of await this.backend.store.laneHeads({ group: this.backend.group, topic: this.backend.source, partition: p })) {
          if (head.leaseUntilMs > now) leases.push(head.leaseUntilMs - now);
        }
      }
      needed = leases.length === 0 ? 0 : Math.ceil(Math.min(...leases) / COMMITTER_PERIOD_MS) * COMMITTER_PERIOD_MS;
    }
    this.#skew += ms;
    this.#unpaced += ms - Math.min(ms, needed);
  }

  /**
   * How far a drain round moves the clock: not at all (1 ms) while a copy in a tier (past its trigger's position) is
   * due; else until the next copy is due or lease of a lane head expires, at most a committer period; `IDLE_TICK_MS`
   * with none of these.
   */
  async #drainTick(): Promise<number> {
    const now = this.clock.now();
    const waits: number[] = [];
    for (const topic of this.tierTopics) {
      for (const c of (this.tierLogs.get(topic) ?? []).slice(this.position.get(tpKey(topic, 0)) ?? 0)) waits.push(c.item.dueAtMs - now);
    }
    // Records not delivered yet are delivered every round (a refused one waits for its lane: no reason to move).
    for (const p of this.sourceLogs.keys()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      // An expired lease is the round's re-drive to take: nothing to wait for.
      for (const head of await this.backend.store.laneHeads(ref)) if (head.leaseUntilMs > now) waits.push(head.leaseUntilMs - now);
    }
    if (waits.length === 0) return IDLE_TICK_MS;
    if (waits.some((wait) => wait <= 0)) return 1;
    return Math.min(COMMITTER_PERIOD_MS, Math.min(...waits) + 1);
  }

  /** Each recovery whose records all became terminal again before the next one of its partition (`RecoveryTime`). */
  #timeRecoveries(): void {
    if (this.#recoveryTimes === undefined) return;
    for (const [i, r] of this.#recoveryLog.entries()) {
      const next = this.#recoveryLog.slice(i + 1).find((later) => later.p === r.p);
      const within = (e: { seq: number }): boolean => e.seq > r.seq && (next === undefined || e.seq <= next.seq);
      let last: { at: number; commits: number } | undefined = { at: r.foundAt, commits: r.commits };
      let ran: { at: number; commits: number } | undefined = { at: r.foundAt, commits: r.commits };
      for (let o = r.from; o < (this.sourceLogs[r.p]?.length ?? 0) && last !== undefined && ran !== undefined; o += 1) {
        const rk = `${r.p}:${o}`;
        const event = this.#terminalLog.find((e) => e.rk === rk && e.seq > r.seq);
        if (event === undefined || !within(event)) last = undefined;
        else if (event.at > last.at) last = event;
        // A record waiting behind one of its lane that failed again after the recovery waits for the retry policy
        // (backoffs, a hold until an operator releases it), not for the recovery: it is not timed as run again.
        const lane = this.laneOf(r.p, o);
        const behindFailure = lane !== undefined && Array.from({ length: o - r.from }, (_, i) => r.from + i).some((m) => this.laneOf(r.p, m) === lane &&
          (this.runs.some((x) => x.p === r.p && x.o === m && within(x) && x.outcome !== 'ok' && x.outcome !== 'killed' && x.outcome !== 'running') ||
            this.#terminalLog.some((e) => e.rk === `${r.p}:${m}` && e.deadLetter === true && within(e))));
        if (behindFailure) continue;
        // Run again, or terminal again without a run (a value that is not JSON is dead-lettered unread).
        const run = this.runs.find((x) => x.p === r.p && x.o === o && within(x));
        const again = run === undefined || (event !== undefined && within(event) && event.seq < run.seq) ? event : run;
        if (again === undefined || !within(again)) ran = undefined;
        else if (again.at > ran.at) ran = again;
      }
      if (last !== undefined && ran !== undefined) {
        this.#recoveryTimes.push({ ranAgainMs: ran.at - r.lostAt, sinceLossMs: last.at - r.lostAt, sinceFoundMs: last.at - r.foundAt, committerRuns: ran.commits - r.commits });
      }
    }
  }

  async #finalChecks(): Promise<void> {
    const { maxAttempts } = this.spec;
    for (const [p, log] of this.sourceLogs.entries()) {
      for (let o = 0; o < log.length; o += 1) {
        const rk = `${p}:${o}`;
        // G1: nothing lost.
        if (!this.terminal(rk)) this.violate(`${rk} was lost: never completed nor dead-lettered (G1)`);
        const bad = this.spec.badValues.some((b) => b.p === p && b.o === o);
        if (bad && (this.runs.some((r) => r.p === p && r.o === o) || (this.successes.get(rk) ?? 0) > 0)) this.violate(`${rk} has a value that is not JSON, yet a handler ran it`);
        for (const dl of this.deadLetters.get(rk) ?? []) {
          if (bad) {
            if (dl.reason !== 'deserialization') this.violate(`${rk} has a value that is not JSON, yet was dead-lettered with reason ${dl.reason}`);
            continue;
          }
          const cause = this.runs.find((r) => r.p === p && r.o === o && r.attempt === dl.attempt && expectedReason(r.outcome, r.attempt, maxAttempts) === dl.reason);
          if (cause === undefined) {
            const seen = this.runs.filter((r) => r.p === p && r.o === o).map((r) => `${r.attempt}:${r.outcome}`);
            this.violate(`${rk} dead-lettered at attempt ${dl.attempt} with reason ${dl.reason}, which no run of it explains (runs ${seen.join(', ')})`);
          }
        }
      }
    }
    // A loss never found, while runs broke lane order meanwhile: order broken for good.
    // After a first-minute loss a lane may run ahead blind and then heal without any loss being found (a redelivery
    // made its state again and the lost head's copy found itself its head again): a known limit, every record terminal.
    for (const { p, message } of this.#blind) {
      if (!this.#unmarkedLoss.has(tpKey(this.backend.source, p))) this.violate(`Redis lost state, no committer run found it, and meanwhile ${message}`);
    }
    if (this.laneMode) {
      // Per lane, first completions in offset order; on a recovered partition, from its durable frontier on, the
      // first completions after the recovery (earlier ones ran before the loss was found: they may repeat).
      const firstAfter = new Map<string, number>();
      for (const r of this.runs) {
        const cut = this.#recovered.get(r.p);
        if (cut === undefined || r.o < cut.from || r.seq <= cut.seq || r.outcome !== 'ok') continue;
        if (!firstAfter.has(`${r.p}:${r.o}`)) firstAfter.set(`${r.p}:${r.o}`, r.seq);
      }
      const completion = (p: number, o: number): number | undefined => {
        const cut = this.#recovered.get(p);
        return cut !== undefined && o >= cut.from ? firstAfter.get(`${p}:${o}`) : this.firstSuccess.get(`${p}:${o}`);
      };
      for (const [p, log] of this.sourceLogs.entries()) {
        const cut = this.#recovered.get(p);
        for (let o = 0; o < log.length; o += 1) {
          const lane = this.laneOf(p, o);
          const at = completion(p, o);
          if (lane === undefined || at === undefined || (cut !== undefined && o < cut.from)) continue;
          for (let m = 0; m < o; m += 1) {
            const before = completion(p, m);
            if (this.laneOf(p, m) === lane && before !== undefined && before > at) this.violate(`${p}:${o} completed before ${p}:${m} of its lane ${lane}${cut === undefined ? '' : ' (after the recovery)'}`);
          }
        }
      }
    }
    // Without a crash (or a loss) every run is unique: done bits are flushed before an invocation returns, so nothing
    // runs twice (but a copy the broker stored twice runs twice when its record has no lane: no head to check).
    if (this.crashes === 0 && this.losses === 0) {
      const seen = new Map<string, number>();
      const dups = this.spec.dupWrites.length > 0;
      for (const r of this.runs) {
        if (dups && this.laneOf(r.p, r.o) === undefined) continue;
        const id = `${r.p}:${r.o}:${r.attempt}`;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        if (seen.get(id) === 2) this.violate(`no crash, yet ${r.p}:${r.o} attempt ${r.attempt} ran twice`);
      }
      for (const [rk, list] of this.deadLetters) {
        const [p, o] = rk.split(':').map(Number);
        if (dups && this.laneOf(p!, o!) === undefined) continue;
        if (list.length > 1 || (list.length === 1 && (this.successes.get(rk) ?? 0) > 0)) {
          this.violate(`no crash, yet ${rk} was dead-lettered ${list.length} time(s) and completed ${this.successes.get(rk) ?? 0} time(s)`);
        }
      }
    }
  }
}
