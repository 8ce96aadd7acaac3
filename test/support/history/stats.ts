/** What histories did (their stats and recovery times), and the property that runs many of them. */

import fc from 'fast-check';
import { type HistoryShape, historyArb } from './shapes';
import type { HistorySpec } from './spec';

export interface RunOptions {
  /**
   * How long each handler takes, in ms (default: one turn of the event loop). Set, the record timeout is a minute
   * instead of 10 ms, so a history with `timeout` faults would wait that long.
   */
  readonly handlerMs?: number;
  /** Each recovery's timing is appended here (see `RecoveryTime`), for the fuzz's summary. */
  readonly recoveryTimes?: RecoveryTime[];
  /**
   * How often the committer runs, in ms of the history's clock (default `COMMITTER_PERIOD_MS`, the plugin's
   * `rate(1 minute)`; the "as deployed" schedule is 2 s): a drain round moves the clock at most this far.
   */
  readonly committerPeriodMs?: number;
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
  /** Copies a round of a durable retry function left waiting for a later round (`suspend` histories). */
  readonly suspended: number;
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
  invocations: 0, crashes: 0, runs: 0, copyRuns: 0, drainedRuns: 0, hangs: 0, copies: 0, deadLetters: 0, redeliveredRuns: 0, refused: 0, operatorReleases: 0, redriven: 0, suspended: 0, losses: 0, lossesUnmarked: 0, lossesHeld: 0, lossesHeldMarked: 0, lanesLost: 0, rewinds: 0, lossesFound: 0, recoveries: 0, blindRuns: 0,
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
