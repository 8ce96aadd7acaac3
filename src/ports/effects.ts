/**
 * The exactly-once port of a record's effects (`ctx.step`, output dedupe) and its nouns. The Redis effects store
 * (`completion/effects-store.ts`) implements it; the in-memory model of src/testing in unit tests and `kafka-lanes/testing`.
 */
import type { RecordCoordinates } from '../event';
import type { CallLimits } from './limits';
import type { PartitionRef } from './partition';

/** Where one record's step results live (`ctx.step`): its first origin's partition (the hash tag) and offset. */
export interface StepsRef {
  readonly ref: PartitionRef;
  readonly offset: number;
}

/** The step results of a record of a partition to delete: its offset and the names of its steps. */
export interface RecordSteps {
  readonly offset: number;
  readonly names: readonly string[];
}

/** The step results of a terminal record to delete: where they live and the names of its steps. */
export interface StoredSteps extends StepsRef, RecordSteps {}

/** The identity of an output another kafka-lanes stage sent (its `lanes-output` header). */
export interface OutputId {
  /** The group of the stage that sent it. */
  readonly group: string;
  /** The first origin of the record whose handler sent it. */
  readonly origin: RecordCoordinates;
  /** Its place among that record's outputs, from 0. */
  readonly index: number;
}

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
