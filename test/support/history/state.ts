/** The ghost of a history: what it saw run, what the broker acknowledged, its clock; the store and sink its containers use. */

import { Logger } from '@aws-lambda-powertools/logger';
import type { KafkaRecordInput } from '../../../src/event';
import type { HandOffItem } from '../../../src/ports/handoff';
import type { Clock } from '../../../src/ports/clock';
import type { LanesOptions } from '../../../src/options';
import { retryTopic } from '../../../src/options/names';
import type { Telemetry } from '../../../src/telemetry';
import { copyRecord } from '../engine-rig';
import { type HistoryBackend, tpKey } from './backend';
import { Container, ContainerSink, ContainerStore } from './container';
import { COMMITTER_PERIOD_MS, type LoggedCopy, RECORD_TIMEOUT_MS, type Run, TIERS, copyId, historyOptions, HISTORY_LOG_LEVEL, silent } from './runtime';
import type { FailureKind, HistorySpec } from './spec';
import type { HistoryStats, RecoveryTime, RunOptions } from './stats';

export class HistoryState {
  readonly spec: HistorySpec;
  readonly backend: HistoryBackend;
  readonly options: LanesOptions;
  readonly laneMode: boolean;
  readonly clock: Clock;
  protected skew = 0;
  /** Of `skew`, what the steps moved the clock beyond what the system needed (see `advance`). */
  protected unpaced = 0;
  readonly sourceLogs: KafkaRecordInput[][];
  readonly tierTopics: string[];
  readonly tierLogs = new Map<string, LoggedCopy[]>();
  /** Where each trigger (source partition, retry tier) reads next. */
  readonly position = new Map<string, number>();
  /** What the committer last committed, per partition. */
  committed = new Map<string, number>();
  readonly failurePlan = new Map<string, FailureKind>();
  readonly dupWrites: Set<number>;
  protected writes = 0;
  protected seq = 0;
  protected invocations = 0;
  crashes = 0;
  refused = 0;
  operatorReleases = 0;
  redriven = 0;
  /** Copies rounds left waiting (`suspend` histories). */
  suspended = 0;
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
  /** How far a drain round moves the clock at most: the committer's period (`RunOptions.committerPeriodMs`). */
  protected readonly committerPeriodMs: number;
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
  protected readonly snapshots = new Map<number, unknown>();
  /** `released` at the start of each step, kept with its snapshot: what a restored snapshot remembers released. */
  protected readonly releasedAt = new Map<number, ReadonlySet<string>>();
  /** Source partitions that lost state no committer run has found yet: their runs may break lane order. */
  protected readonly undetected = new Set<number>();
  /** Lane-order breaks seen while their partition's loss stood undetected; each must be found by the end. */
  protected readonly blind: Array<{ p: number; message: string }> = [];
  protected blindRuns = 0;
  /**
   * Partitions (`tpKey`) that lost state before their first durable marker: the committer's first commit may pass
   * records the lost state held (nothing durable told it otherwise) below where the marker's commits vouch from,
   * until a retry copy of one reports it and the recovery moves the completion group back (docs/durability.md).
   * With no record after the loss, nothing is there to commit: the completion group stays behind, its records all
   * terminal (checked by G1 at the end).
   */
  protected readonly unmarkedLoss = new Set<string>();
  /** Source partitions the next committer run must find lost (every key was lost while they had a marker). */
  protected readonly mustFind = new Set<number>();
  /** Per source partition, when Redis lost state there that no committer run has found yet (the history's clock). */
  protected readonly lostAt = new Map<number, number>();
  /** Every recovery: partition, the durable frontier it read from, the run sequence then, the loss and when found. */
  protected readonly recoveryLog: Array<{ p: number; from: number; seq: number; lostAt: number; foundAt: number; commits: number }> = [];
  /** Records becoming terminal (a success, a dead letter): the run sequence, the clock, the committer runs so far. */
  protected readonly terminalLog: Array<{ rk: string; seq: number; at: number; commits: number; deadLetter?: boolean }> = [];
  protected commits = 0;
  protected readonly recoveryTimes: RecoveryTime[] | undefined;
  /** Per source partition, the last recovery: the run sequence then, and the durable frontier it read from. */
  protected readonly recovered = new Map<number, { seq: number; from: number }>();
  /** What the committer logged as errors, by partition (`tpKey`), since the last committer run. */
  protected readonly lossLog: string[] = [];
  protected readonly telemetry: Telemetry;
  /** Partitions (`tpKey`) an invocation was given records of. */
  protected readonly delivered = new Set<string>();
  /** Write-backs with a new due time of copies not due yet (each a violation). */
  protected earlyWriteBacks = 0;
  /** Per copy (`copyId`), its write-backs with a new due time. */
  protected readonly movedWriteBacks = new Map<string, number>();

  constructor(spec: HistorySpec, backend: HistoryBackend, run: RunOptions) {
    this.spec = spec;
    this.backend = backend;
    this.handlerMs = run.handlerMs;
    this.committerPeriodMs = run.committerPeriodMs ?? COMMITTER_PERIOD_MS;
    this.recoveryTimes = run.recoveryTimes;
    this.options = historyOptions(spec, backend.group, run.handlerMs === undefined ? RECORD_TIMEOUT_MS : 60_000);
    this.laneMode = spec.ordering !== 'unordered';
    this.clock = { now: () => Date.now() + this.skew };
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
    const logger = new Logger({ logLevel: HISTORY_LOG_LEVEL });
    const error = logger.error.bind(logger);
    logger.error = (input: unknown, ...extra: unknown[]): void => {
      const fields = extra.find((x): x is { topic: string; partition: number } => typeof x === 'object' && x !== null && 'topic' in x);
      if (fields !== undefined) this.lossLog.push(tpKey(fields.topic, fields.partition));
      error(input as string, ...(extra as []));
    };
    this.telemetry = { logger, metrics: silent.metrics };
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
      invocations: this.invocations,
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
      suspended: this.suspended,
      losses: this.losses,
      lossesUnmarked: this.lossesUnmarked,
      lossesHeld: this.lossesHeld,
      lossesHeldMarked: this.lossesHeldMarked,
      lanesLost: this.lanesLost,
      rewinds: this.rewinds,
      lossesFound: this.lossesFound,
      recoveries: this.recoveries,
      blindRuns: this.blindRuns,
      records: this.sourceLogs.reduce((n, log) => n + log.length, 0),
      movedWriteBacks: [...this.movedWriteBacks.values()].reduce((n, c) => n + c, 0),
      earlyWriteBacks: this.earlyWriteBacks,
      movedCopies: this.movedWriteBacks.size,
      maxWriteBacks: Math.max(0, ...this.movedWriteBacks.values()),
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

  protected storeOf(container: Container): ContainerStore {
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
  protected sinkOf(container: Container, invocation: number, taken?: ReadonlyMap<string, HandOffItem>): ContainerSink {
    return new ContainerSink(container, (items) => {
      for (const item of items) {
        // A write-back is built from the copy as read (its own topic and offset), with the same attempt.
        const from = item.kind === 'retry' ? taken?.get(`${item.record.topic}@${item.record.offset}`) : undefined;
        if (from !== undefined && from.attempt === item.attempt && from.dueAtMs !== item.dueAtMs) {
          const due = from.dueAtMs;
          this.movedWriteBacks.set(copyId(item), (this.movedWriteBacks.get(copyId(item)) ?? 0) + 1);
          if (this.clock.now() < due) {
            this.earlyWriteBacks += 1;
            this.violate(`#${invocation} wrote ${copyId(item)} back due +${item.dueAtMs - this.clock.now()}ms, ${due - this.clock.now()} ms before the copy it was given was due: a copy not due goes back unchanged`);
          }
        }
        const ordinal = this.writes;
        this.writes += 1;
        const rk = `${item.origin.partition}:${item.origin.offset}`;
        if (item.kind === 'dead-letter') {
          if (item.origin.topic !== this.backend.source) {
            this.violate(`#${invocation} dead-lettered a record whose origin is not a source record: ${JSON.stringify(item.origin)} (${item.reason})`);
          }
          const list = this.deadLetters.get(rk) ?? [];
          list.push({ attempt: item.attempt, reason: item.reason ?? '' });
          this.deadLetters.set(rk, list);
          this.terminalLog.push({ rk, seq: this.seq, at: this.paced(), commits: this.commits, deadLetter: true });
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

  /**
   * The clock as the recovery times read it (`RecoveryTime`): a step's move of the clock stands for the pace the
   * history chose for its triggers, so only what the system needed of it counts: for a retry delivery, until the
   * earliest copy waiting in a tier is due; for a committer run, until the earliest lease of a lane head expired,
   * rounded up to a committer period (the committer runs once a period). The drain's moves count whole.
   */
  protected paced(): number {
    return this.clock.now() - this.unpaced;
  }
}
