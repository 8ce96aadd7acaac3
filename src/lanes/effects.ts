/**
 * The ports of a record's exactly-once effects (`ctx.step`, `ctx.send`, output dedupe), and
 * how long their state lives. The Redis effects store and the output writer implement them in production; the
 * in-memory model of src/testing in unit tests and in `kafka-lanes/testing`.
 */
import type { CallLimits } from '../completion/scripts';
import type { OutputId, PartitionRef, StepsRef, StoredSteps } from '../completion/types';
import type { LanesOptions } from '../options/lanes-options';
import { durationMs } from '../options/duration';

export type { CopyClaim, OutputId, StepsRef, StoredSteps } from '../completion/types';

/** The Redis state of steps, output dedupe and unordered retry copies. Every call is safe to repeat. */
export interface EffectsPort {
  /** The stored results of a record's completed steps (name → serialized result). */
  loadSteps(at: StepsRef): Promise<ReadonlyMap<string, string>>;
  /**
   * Stores a step's result unless one is stored already; returns the stored one then (a run cut off by its deadline
   * that finished anyway stored it first: every run then goes on with the same result).
   */
  saveStep(at: StepsRef, name: string, value: string, ttlMs: number): Promise<string | undefined>;
  /**
   * The highest offset of the partition (first origins) with stored step results (-1: none): no record above it has
   * any. `undefined` (or no such method): not known, so every record reads its steps. A store that has not seen a
   * step yet reads the marker once per partition and answers `undefined` after that, so a function without steps
   * pays one call per partition, not one per admission.
   */
  stepsStoredUpTo?(ref: PartitionRef): Promise<number | undefined>;
  /** Deletes the step results of records that are terminal (the steps of each named; one stored by no run named stays until it expires). */
  forgetSteps(at: readonly StoredSteps[]): Promise<void>;
  /**
   * Takes an output for the record running it (`runner`, its origin): `true` when it is the first to take it or
   * takes it again (a run of the same record), `false` when another record took it (a repeat: skip it).
   */
  claimOutput(group: string, id: OutputId, runner: string, ttlMs: number): Promise<boolean>;
  /** The same store with other call limits (an invocation's deadline signal). */
  withLimits?(limits: CallLimits): EffectsPort;
}

/** A record a handler sends with `ctx.send`; `value` other than a string, a Buffer or null is sent as JSON. */
export interface OutputRecord {
  readonly key?: string | Buffer | null;
  readonly value: unknown;
  readonly headers?: Readonly<Record<string, string | Buffer>>;
  /** A partition of its own; default: the producer's partitioner, by key. */
  readonly partition?: number;
}

export type { OutputMessage, OutputSink } from '../handoff/types';

/**
 * The header that identifies an output, `<group>/<topic>/<partition>/<offset>/<index>`: the group of the stage that
 * sent it, the first origin of the record whose handler sent it, and its place among that record's outputs (group and
 * topic names hold no `/`). A stage with `dedupeOutputs` reads it. One header rather than one per part: the producer
 * encodes every header in a buffer of its own, and three took an output's encoding from about 3 to 5 µs.
 */
export const OUTPUT_HEADER = 'lanes-output';

/** The three headers outputs carried before `OUTPUT_HEADER`, still read: such outputs may still wait in a topic. */
export const LegacyOutputHeader = {
  Group: 'lanes-output-group',
  /** `<topic>/<partition>/<offset>`: the first origin of the record whose handler sent it. */
  Origin: 'lanes-output-origin',
  Index: 'lanes-output-index',
} as const;

/**
 * How long step results, output claims and copy claims are kept: long enough for a record's whole retry path
 * (every attempt waiting the longest delay a tier or the backoff can give, then running to its timeout), plus the
 * replay horizon during which a dead letter may be replayed and find them.
 *
 * @example
 * effectsTtlMs(resolveOptions({ group: 'g' })); // 5 × (10 min + 60 s) + 7 days
 */
export function effectsTtlMs(options: LanesOptions): number {
  const { retry, recordTimeoutMs, steps } = options;
  const longestTier = Math.max(...retry.tiers.map((tier) => durationMs(tier) ?? 0));
  const longestBackoff = retry.backoff.type === 'fixed' ? retry.backoff.delayMs : retry.backoff.maxDelayMs;
  return retry.maxAttempts * (Math.max(longestTier, longestBackoff) + recordTimeoutMs) + steps.replayHorizonMs;
}
