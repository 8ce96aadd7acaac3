/** What a history's runs share: the options, the timings, the ghost's record of a run, the planned failures. */

import { Logger } from '@aws-lambda-powertools/logger';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { NonRetriableError, RetryLaterError } from '../../../src/errors';
import type { KafkaRecordInput } from '../../../src/event';
import type { HandOffItem } from '../../../src/ports/handoff';
import { type LanesOptions, type LanesOptionsInput, resolveOptions } from '../../../src/options';
import type { FailureKind, HistorySpec } from './spec';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

/** One handler run, as the ghost saw it start. */
export interface Run {
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
export interface LoggedCopy {
  readonly record: KafkaRecordInput;
  readonly item: HandOffItem;
}

export const TIERS = ['1s', '1m'] as const;
/**
 * The deployed committer's period (the plugin's `rate(1 minute)`): a drain round moves the clock to the next copy due
 * or lease expiring, and at most this far, so the recovery times the histories print are what a deployed group takes.
 */
export const COMMITTER_PERIOD_MS = 60_000;
/** A drain round with nothing due or leased moves the clock this far (a committer check that takes time, e.g. `OVERDUE_HEAD_MS`). */
export const IDLE_TICK_MS = 600_000;
export const DRAIN_ROUNDS = 150;
export const RECORD_TIMEOUT_MS = 10;
export const LONG_MS = 60_000;
/** Remaining time of an invocation whose copies are not all due: it waits 2 ms, then writes them back. */
export const SHORT_MS = 1_002;
export const CUT_MS = 500;
/** In the drain, what a retry invocation given copies not all due leaves the due ones to start (a loaded machine). */
export const DRAIN_START_MS = 250;
/**
 * In a retry step, what a retry invocation given copies not all due leaves the other copies to start: time to look at
 * every copy of a small batch (a deployed invocation has minutes), while one not due waits.
 */
export const STEP_START_MS = 20;
export const STOP_MS = 1_003;

/** A retry copy's identity across its write-backs: its origin and attempt. */
export function copyId(item: HandOffItem): string {
  return `${item.origin.partition}:${String(item.origin.offset)}@${item.attempt}`;
}

/** The level of the histories' loggers: `SILENT`, or `HISTORY_LOG_LEVEL` (e.g. `INFO`) to read what a replayed history logs. */
export const HISTORY_LOG_LEVEL = (process.env.HISTORY_LOG_LEVEL ?? 'SILENT') as LogLevel;

export const silent = { logger: new Logger({ logLevel: HISTORY_LOG_LEVEL }), metrics: new Metrics({ namespace: 'test', serviceName: 'test' }) };
export const optionsCache = new Map<string, LanesOptions>();

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

export function errorOf(kind: FailureKind): Error {
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
export function expectedReason(outcome: Run['outcome'], attempt: number, maxAttempts: number): string | undefined {
  if (outcome === 'fatal') return 'non-retriable';
  if (outcome === 'bug') return 'programming-error';
  if (outcome === 'transient' || outcome === 'soon' || outcome === 'later' || outcome === 'hang') {
    return attempt >= maxAttempts ? 'attempts-exhausted' : undefined;
  }
  return undefined;
}

export function aborted(signal: AbortSignal): Promise<never> {
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
