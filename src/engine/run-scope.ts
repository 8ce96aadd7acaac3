/**
 * The seam between the engine and its two record paths (source records, retry copies): a path gets a run
 * scope, a small set of closures over one invocation, the way kafkajs hands its batch handler `resolveOffset`
 * and `heartbeat` rather than the runner. A path never sees the invocation itself.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { PartitionRef } from '../ports/partition';
import type { KafkaBatchResponse, KafkaRecord, PartitionBatch, RecordCoordinates } from '../event';
import type { EffectsPort } from '../ports/effects';
import type { LaneHeadScope } from '../lanes/lane-heads';
import { effectsTtlMs } from '../lanes/effects';
import { copiesFor, type Copies } from '../handoff/copies';
import type { LanesOptions } from '../options/lanes-options';
import type { CounterName } from './run-report';
import type { Task } from './scheduler';

/** The part of the Lambda context the engine needs. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  readonly awsRequestId?: string;
}

/** One record to run: where its done bit goes, what the handler sees, and its attempt. */
export interface EngineTask extends Task {
  /** The partition of the delivered record (a source partition, or a retry topic's for a retry copy). */
  readonly ref: PartitionRef;
  /** What the handler is given. */
  readonly record: KafkaRecord;
  /** The record's origin: a retry copy's comes from its headers. */
  readonly origin: RecordCoordinates;
  readonly attempt: number;
  /** Set when the record cannot run at all (its `keyOf` threw): it fails with this at once. */
  readonly preset?: unknown;
  /**
   * The record never ran before: admitted for the first time, above every offset with stored step results of its
   * partition. Its durable steps start without reading Redis.
   */
  readonly fresh?: boolean;
}

/**
 * What a record path may do within one invocation, grouped by what it is for. A helper names only the groups it
 * uses (a test's fake scope then needs no more than those); a record path gets them all, and no more. What is the
 * same for every invocation of a function (its options, how copies are built, its logger, how long effects live) is
 * not in it: the engine and the record paths are given that once, in their constructors (`PathParts`).
 */
export interface RunScope<T extends EngineTask> extends ScopeGiven, ScopeTime, ScopeLanes<T>, ScopeSettling, ScopeFigures {}

/**
 * What the invocation was given: the ports it writes through (with the clock, the lease and the hand-off write of
 * `LaneHeadScope`: what moves a lane head outside a run).
 */
export interface ScopeGiven extends Omit<LaneHeadScope, keyof PathParts> {
  /** Step results and output dedupe, bounded like `store`; absent: refused. */
  readonly effects: EffectsPort | undefined;
}

/** What a function's record paths are given once, in their constructors: the same for every invocation. */
export interface PathParts {
  readonly options: LanesOptions;
  /** Builds the copies the paths write. */
  readonly copies: Copies;
  readonly logger: Logger;
  /** How long step results, output claims and copy claims are kept. */
  readonly effectsTtlMs: number;
}

/**
 * A run scope with the function's parts: what the engine's own record runs read (a record's context, its outputs).
 * A record path gets the run scope alone, and keeps the parts it was given as fields.
 */
export type InvocationScope<T extends EngineTask> = RunScope<T> & PathParts;

/**
 * A function's path parts from its options, its logger and its clock: made once per function, given to its engine
 * and its record paths, so both build copies with the one builder.
 *
 * @example
 * const parts = pathParts(options, telemetry.logger);
 * const engine = new Engine({ options, handler, store, telemetry, paths: parts });
 * const source = new SourcePath(parts);
 */
export function pathParts(options: LanesOptions, logger: Logger, now: () => number = Date.now): PathParts {
  return { options, copies: copiesFor(options, now), logger, effectsTtlMs: effectsTtlMs(options) };
}

/** The invocation's deadlines (besides `now` and the lease of `LaneHeadScope`). */
export interface ScopeTime {
  /** No record starts after this (epoch ms). */
  readonly stopStartingAt: number;
  /** Running records are aborted at this point (epoch ms). */
  readonly abortRunningAt: number;
  /** Aborts when no record may start any more (waits for due times end there). */
  readonly stopSignal: AbortSignal;
  /** How the invocation treats a retry copy not due yet (docs/ARCHITECTURE.md, "The suspend loop"). */
  readonly copyWait: CopyWait;
}

/**
 * How an invocation treats a retry copy not due yet: `inline`, a plain invocation, waits for it (up to its stop time);
 * `suspend`, a round of a durable execution, leaves it waiting for a later round of the same event (`ScopeSettling.
 * waiting`), up to `untilMs`, the latest a round of the execution may wait for.
 */
export type CopyWait = { readonly kind: 'inline' } | { readonly kind: 'suspend'; readonly untilMs: number };

/** A plain invocation's way: copies not due are waited for in the invocation. */
export const INLINE_WAIT: CopyWait = { kind: 'inline' };

/** What a round leaves for a later round of its execution: how many copies wait, and when the earliest is to be looked at again. */
export interface Waiting {
  readonly copies: number;
  /** Epoch ms. */
  readonly nextDueAtMs: number;
}

/** `waiting` with one more copy, to be looked at again at `wakeAtMs`. */
export function moreWaiting(waiting: Waiting | undefined, wakeAtMs: number): Waiting {
  return { copies: (waiting?.copies ?? 0) + 1, nextDueAtMs: Math.min(waiting?.nextDueAtMs ?? wakeAtMs, wakeAtMs) };
}

/** What an invocation answers the event source, and what it leaves for a later round (`Engine.round`). */
export interface InvocationOutcome {
  readonly response: KafkaBatchResponse;
  readonly waiting: Waiting | undefined;
}

/** The lane scheduler of the invocation: what is queued behind a lane's running head. */
export interface ScopeLanes<T extends EngineTask> {
  /** Schedules more tasks (an admitted chunk, a lane's next head); they start as soon as their lane is free. */
  enqueue(tasks: readonly T[]): void;
  /** Removes and returns the not-started tasks of a lane. */
  drainLane(partitionKey: string, lane: string): T[];
  /**
   * The task waits before it runs (a retry copy not due yet): its concurrency slot goes to other records meanwhile,
   * its lane stays held. `takeSlot` before it runs the handler; finished without it, it needs none.
   */
  leaveSlot(task: T): void;
  /** Takes a slot again after `leaveSlot`: at once if one is free, else before any record not started. */
  takeSlot(task: T): Promise<void>;
  /** Settles once the partition's whole batch is admitted. */
  admitted(partitionKey: string): Promise<void>;
}

/** How a delivered record ends in this invocation: done, or back to the event source. */
export interface ScopeSettling {
  /**
   * The record is terminal or handed off: its done bit goes out with the next flush. `again`: a repair of a bit set
   * before (a retry copy's origin); one that cannot be stored is logged, not redelivered.
   */
  markDone(ref: PartitionRef, offset: number, again?: boolean): void;
  /**
   * Reports records for redelivery (the partial batch response): they could not be handed off, admitted or
   * recorded. `error` given: logged with them.
   */
  redeliver(ref: PartitionRef, offsets: readonly number[], error?: unknown): void;
  /** Records the event source cannot be told about (no readable offset): the invocation fails instead. */
  unreportable(count: number): void;
  /**
   * A copy waits for a later round of its execution (`CopyWait` `suspend`), to be looked at again at `wakeAtMs`: it is
   * neither done nor reported for redelivery, and nothing about its lane changes; the event holds it until then.
   */
  waiting(wakeAtMs: number): void;
  /**
   * Keeps a fault of ours in work started at admission from ending the process with an unhandled rejection:
   * those hand-offs are awaited only after the runs, long after they may fail. Each reports its own failures.
   */
  guard(work: Promise<unknown>, partitionKey: string): Promise<void>;
}

/** The run report's figures. */
export interface ScopeFigures {
  count(name: CounterName, by?: number): void;
  /** Where a partition stands after its admission, for the frontier metrics. */
  window(ref: PartitionRef, window: { frontier: number; highest: number }): void;
}

/**
 * What differs between the source records and the retry copies: how a delivered batch becomes tasks, what
 * happens before a task runs, and after it succeeded or failed. Everything else (scheduling, timeouts,
 * hand-off, flushing, the deadline) is the engine's.
 */
export interface RecordPath<T extends EngineTask> {
  /** Admits one partition's batch: the tasks to run, and hand-offs found at admission (awaited after the runs). */
  admit(scope: RunScope<T>, batch: PartitionBatch): Promise<{ tasks: T[]; handOffs: Promise<unknown> }>;
  /** Runs before the handler; `false`: the task settled without running (a stale copy, one written back). */
  prepare?(scope: RunScope<T>, task: T): Promise<boolean>;
  /** A promise only when there is something to wait for (a source record's success is synchronous). */
  succeeded(scope: RunScope<T>, task: T): Promise<void> | void;
  failed(scope: RunScope<T>, task: T, error: unknown): Promise<void>;
  /** The deadline came: hands the tasks not started off, attempt unchanged. */
  deferUnstarted(scope: RunScope<T>, tasks: T[]): Promise<void>;
  /**
   * A fault of ours (not the handler's) while settling a task. Default: the record and the records waiting
   * behind it in its lane go back to the event source, never on out of order.
   */
  faulted?(scope: RunScope<T>, task: T, error: unknown): void;
}
