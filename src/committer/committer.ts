import type { CommitterState } from '../completion/committer-state';
import type { CompletionStore } from '../completion/store';
import { redriveExpiredLeases, type RedriveOptions, type Redriven } from '../recovery/redrive';
import { checkPartitions, durableMoves, partitionsToCheck, type PartitionCheck } from './durable-moves';
import type { LossRecovery, RecoveryOutcome } from './after-loss';
import { ConfigError, describeValue } from '../errors';
import { CommitNotAppliedError, TopicMissingError } from './errors';
import { CommitterLease } from './lease';
import { movesByTopic, type OffsetCommitter } from './offset-committer';
import { partitionId, planCommit } from './plan';
import { loadReadings, saveReadings } from './state';
import { PlanReasonCode, type CommitMove, type CommitPlan, type CommittedOffset, type PlanReason } from './types';
import type { FrontierReading } from '../completion/args';
import type { PartitionRef } from '../ports/partition';

export const COMMITTER_DEFAULTS = {
  trim: true,
  /**
   * Far above one commit call. A member-less commit is one request (plus at most ~10 s of coordinator
   * retries); the slowest committer, `AdminOffsetCommitter`, takes about 5 s per call, one call per topic,
   * and the lease is renewed before each call.
   */
  leaseTtlMs: 60_000,
} as const;

/**
 * What `runCommitter` needs: the group's completion store, the group, and one `OffsetCommitter` that says
 * how its commits reach Kafka.
 */
/** What a run asks of the committer state's door (`store.committerState(group)`). */
export type CommitterCalls = Pick<
  CommitterState,
  'group' | 'leaseKey' | 'readingsKey' | 'takeLease' | 'extendLease' | 'releaseLease' | 'readings' | 'writeReadings' | 'tracked' | 'track' | 'stamp' | 'mark'
>;

export interface RunCommitterOptions {
  /** The completion engine of the group. */
  readonly store: Pick<CompletionStore, 'frontier' | 'audit'> & { committerState(group: string): CommitterCalls };
  /** The framework's consumer group: the one the completion engine tracks partitions under. */
  readonly group: string;
  /**
   * How commits reach Kafka: `MemberlessOffsetCommitter` (the AWS topology: one request by no member to
   * the completion group `<group>.lanes`), `ConsumerOffsetCommitter` (a live group, through its running
   * consumer), `AdminOffsetCommitter` (kafkajs' public admin API only, slow), or your own.
   */
  readonly committer: OffsetCommitter;
  /** Trim each bitmap below its frontier while reading it (default `true`). */
  readonly trim?: boolean;
  /** Time to live of the run's lease, in ms (default 60 s); must exceed the longest commit request. */
  readonly leaseTtlMs?: number;
  /** The clock (epoch ms) for stall times; the lease always runs on the real clock. */
  readonly now?: () => number;
  /**
   * Re-drive lane heads whose lease expired (their retry copy written again from Redis), under the run's
   * lease, after the commit. The retry function's crash safety relies on some run doing it.
   */
  readonly redrive?: RedriveOptions;
  /**
   * What a run does when it finds a partition's Redis state lost (docs/durability.md): the loss is always logged
   * and left uncommitted; with this, the partition is recovered from Kafka at once, under the run's lease.
   */
  readonly recovery?: LossRecovery;
  /**
   * What the event source mapping has committed in its own consumer group (`<group>`), by partition: every record
   * below it was done or handed off before its invocation returned, so a frontier below it tells done bits lost
   * after the event source moved past them (docs/durability.md). Without it such a loss stalls the partition.
   */
  readonly eventSource?: (topics: readonly string[]) => Promise<CommittedOffset[]>;
}

/** One tracked partition after a run. */
export interface PartitionSummary {
  readonly topic: string;
  readonly partition: number;
  /** What the Kafka group had before the run (`undefined`: nothing). */
  readonly committedBefore: number | undefined;
  /** The frontier read in this run (`undefined`: nothing admitted). */
  readonly frontier: number | undefined;
  /** The highest delivered offset (`undefined`: nothing admitted). */
  readonly highest: number | undefined;
  /** What the Kafka group has after the run: read back from Kafka for every partition that moved. */
  readonly committed: number | undefined;
  /** The frontier has not moved since the previous run while records above it were delivered. */
  readonly stalled: boolean;
  /** How long the frontier has had its value, if known. */
  readonly frontierAgeMs: number | undefined;
}

export interface CommitterResult {
  /** The Kafka group committed to. */
  readonly groupId: string;
  /** Set when the run did nothing: another run holds the group's lease. */
  readonly skipped?: 'lease-held';
  /** Every tracked partition of a topic that exists, sorted by topic and partition. */
  readonly partitions: PartitionSummary[];
  /** The moves committed (all forward). */
  readonly moves: CommitMove[];
  /**
   * Partitions that did not move, and stalls. Partitions of a topic that no longer exists are skipped and
   * appear only here, as `topic-missing`.
   */
  readonly reasons: PlanReason[];
  /** Bitmap bytes trimmed below the frontiers. */
  readonly trimmedBytes: number;
  /** Lane heads re-driven (with `redrive`). */
  readonly redriven?: Redriven[];
  /** Partitions whose Redis state was found lost, and what was done about each. */
  readonly losses?: RecoveryOutcome[];
}

function validate(options: RunCommitterOptions): { trim: boolean; leaseTtlMs: number; now: () => number } {
  if (typeof options.group !== 'string' || options.group === '') {
    throw new ConfigError(`Expected \`group\` to be a non-empty string, got ${describeValue(options.group)}`);
  }
  const leaseTtlMs = options.leaseTtlMs ?? COMMITTER_DEFAULTS.leaseTtlMs;
  if (!Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 1) {
    throw new ConfigError(`Expected \`leaseTtlMs\` to be a positive integer, got ${describeValue(leaseTtlMs)}`);
  }
  const trim = options.trim ?? COMMITTER_DEFAULTS.trim;
  if (typeof trim !== 'boolean') {
    throw new ConfigError(`Expected \`trim\` to be a boolean, got ${describeValue(trim)}`);
  }
  // Read as untyped: JavaScript callers are checked too.
  const committer: unknown = options.committer;
  const given = committer as Partial<Record<'fetchCommitted' | 'commit', unknown>> | null | undefined;
  if (typeof given?.fetchCommitted !== 'function' || typeof given.commit !== 'function') {
    throw new ConfigError(
      'Expected `committer` to be an OffsetCommitter (e.g. `new MemberlessOffsetCommitter(kafka, group)`), ' +
        `got ${describeValue(committer)}`,
    );
  }
  return { trim, leaseTtlMs, now: options.now ?? Date.now };
}

/**
 * One committer run: for every partition the group tracks, read the frontier (trimming the bitmap below
 * it), and commit it where it is ahead of what Kafka has — never backwards (G2), even when runs overlap.
 *
 * Runs are serialized by a per-group lease in Redis, taken before reading what Kafka has committed and
 * held until the last commit; a run that cannot take it does nothing and returns `skipped: 'lease-held'`.
 * Every commit is read back from Kafka; one that did not land throws `CommitNotAppliedError`. Partitions
 * of a topic that no longer exists (deleted) are skipped and reported as `topic-missing`.
 *
 * @example
 * // A scheduled function of the AWS topology: commit the completion group `orders.lanes` in one
 * // member-less OffsetCommit request (it fails with GroupHasMembersError if that group has consumers).
 * const kafka = new Kafka({ clientId: 'committer', brokers });
 * const committer = new MemberlessOffsetCommitter(kafka, 'orders');
 * const result = await runCommitter({ store, group: 'orders', committer });
 * for (const p of result.partitions) if (p.stalled) logger.warn('stalled', p);
 *
 * @example
 * // Only kafkajs' public API (about 5 s per topic: admin.setOffsets joins the group for each).
 * await runCommitter({ store, group: 'orders', committer: new AdminOffsetCommitter(admin, 'orders') });
 *
 * @example
 * // The local emulator: commit the live group through its running consumer (autoCommit: false).
 * const committer = new ConsumerOffsetCommitter({ consumer, admin, groupId: 'orders' });
 * await runCommitter({ store, group: 'orders', committer });
 */
export async function runCommitter(options: RunCommitterOptions): Promise<CommitterResult> {
  const { trim, leaseTtlMs, now } = validate(options);
  const { store, group, committer } = options;

  const state = store.committerState(group);
  const lease = await CommitterLease.acquire(state, leaseTtlMs);
  if (lease === undefined) {
    return { groupId: committer.groupId, skipped: 'lease-held', partitions: [], moves: [], reasons: [], trimmedBytes: 0 };
  }

  let result: CommitterResult;
  try {
    const { result: committed, checks } = await commitUnderLease({ store, state, committer, lease, trim, now, eventSource: options.eventSource });
    result = committed;
    const lost = checks.filter((check) => check.loss !== undefined);
    // Loaded only when needed: the recovery brings Kafka reading and key scanning with it.
    if (lost.length > 0) result = { ...result, losses: await (await import('./after-loss')).recoverLost(lost, options.recovery, lease, committer) };
    if (options.redrive !== undefined) result = { ...result, redriven: await redriveExpiredLeases(options.redrive) };
  } catch (error) {
    // The run's own error is the one to report; a lease that cannot be released expires by its TTL.
    await lease.release().catch(() => false);
    throw error;
  }
  await lease.release();
  return result;
}

/** What a run works with under its lease: the doors, the committer, the lease, its settings. */
interface CommitRun extends Pick<RunCommitterOptions, 'store' | 'committer' | 'eventSource'> {
  readonly state: CommitterCalls;
  readonly lease: CommitterLease;
  readonly trim: boolean;
  readonly now: () => number;
}

/** What a run read before it plans: the partitions to look at, what Kafka holds of them, their frontiers. */
interface RunReadings {
  /** The tracked set as Redis holds it. */
  readonly trackedSet: readonly PartitionRef[];
  /** Every partition to look at: the tracked set's and those the completion group carries a marker for. */
  readonly allTracked: readonly PartitionRef[];
  /** Topics of `allTracked` Kafka no longer has. */
  readonly missing: ReadonlySet<string>;
  /** The partitions of `allTracked` whose topic exists, with their frontier readings (in that order). */
  readonly tracked: readonly PartitionRef[];
  readonly frontiers: ReadonlyArray<FrontierReading | undefined>;
  readonly committed: readonly CommittedOffset[];
  /** What the event source mapping committed, by `partitionId`. */
  readonly delivered: ReadonlyMap<string, number | undefined>;
}

/** The run's steps: read, plan and check, commit what is durable, mark, sum up. */
async function commitUnderLease(run: CommitRun): Promise<{ result: CommitterResult; checks: PartitionCheck[] }> {
  const read = await readPartitions(run);
  const plan = planCommit({
    frontiers: read.tracked.map((ref, i) => ({ topic: ref.topic, partition: ref.partition, reading: read.frontiers[i] })),
    committed: read.committed,
    previous: await loadReadings(run.state),
    nowMs: run.now(),
  });
  await saveReadings(run.state, plan.next);
  const readings = read.tracked.map((ref, i) => ({ ref, frontier: read.frontiers[i]?.frontier, delivered: read.delivered.get(partitionId(ref)) }));
  const checks = await checkPartitions(run, readings, read.committed, run.now());
  const moves = durableMoves(plan.moves, checks);
  // Found by its marker alone with its state whole: the tracked set was lost. The re-drive reads that set.
  const known = new Set(read.trackedSet.map(partitionId));
  await run.state.track(checks.filter((c) => c.audit.present && c.loss === undefined && !known.has(partitionId(c.ref))).map((c) => c.ref));
  const committed = await commitMoves(run, moves);
  await markLanded(run.state, checks, moves);
  return { result: summary(run, read, plan, committed), checks };
}

/** The partitions to look at, what Kafka holds of them and their frontiers, in the order a loss check needs. */
async function readPartitions({ store, state, committer, trim, eventSource }: CommitRun): Promise<RunReadings> {
  // Partitions the completion group carries a marker for are checked too: Redis may have lost its tracked set.
  const trackedSet = await state.tracked();
  const allTracked = partitionsToCheck(state.group, trackedSet, (await committer.fetchAllCommitted?.()) ?? []);
  // Fetched under the lease: no other committer run can change these offsets until this run commits.
  const { committed, missing } = await fetchExisting(committer, [...new Set(allTracked.map((ref) => ref.topic))]);
  const tracked = allTracked.filter((ref) => !missing.has(ref.topic));
  // Read BEFORE the frontiers: the event source commits an offset only after the invocation that ran the records
  // below it returned, their done bits flushed; done bits only grow, so a frontier read later is at least that
  // offset unless bits were lost. Read after them, an invocation returning in between would look like a loss.
  const topics = [...new Set(tracked.map((ref) => ref.topic))];
  const delivered = new Map(((topics.length > 0 ? await eventSource?.(topics) : undefined) ?? []).map((c) => [partitionId(c), c.offset]));
  // Trimming while reading is safe even if the commit below then fails: trimming drops only done bits
  // below the frontier and never changes the frontier, so the next run reads the same (or a later)
  // frontier and commits it. Nothing below an uncommitted frontier needs its bits: offsets below `base`
  // are done by definition (docs/ARCHITECTURE.md, "Redis layout").
  const frontiers = await Promise.all(tracked.map((ref) => store.frontier(ref, { trim })));
  return { trackedSet, allTracked, missing, tracked, frontiers, committed, delivered };
}

/** The moves a run committed, and what Kafka has after them, by `partitionId`, on the topics moved. */
interface Committed {
  readonly moves: CommitMove[];
  readonly after: ReadonlyMap<string, number | undefined>;
}

/** Commits the moves and reads them back. */
async function commitMoves({ committer, lease }: CommitRun, moves: CommitMove[]): Promise<Committed> {
  const byTopic = movesByTopic(moves);
  const after = new Map<string, number | undefined>();
  if (moves.length === 0) return { moves, after };
  // The committer renews the lease before each request it sends; a lease that expired during one is
  // found by the next renewal, or here, after the last.
  await committer.commit(moves, lease);
  lease.assertStillHeld(`the commit of ${[...byTopic.keys()].join(', ')} to ${committer.groupId}`);
  for (const c of await committer.fetchCommitted([...byTopic.keys()])) after.set(partitionId(c), c.offset);
  const missed = moves.filter((move) => (after.get(partitionId(move)) ?? -1) < move.to);
  if (missed.length > 0) {
    const list = missed
      .map((m) => `${m.topic}-${m.partition} (wanted ${m.to}, has ${String(after.get(partitionId(m)))})`)
      .join(', ');
    throw new CommitNotAppliedError(`commit to ${committer.groupId} did not land on ${list}`);
  }
  return { moves, after };
}

/**
 * A state whose generation the completion group's marker names (committed now or before) is marked in Redis: its
 * first minute is over, and a lane the `hold` policy holds needs no watch copy from then on (docs/durability.md, "The first minute").
 */
async function markLanded(state: CommitterCalls, checks: readonly PartitionCheck[], moves: readonly CommitMove[]): Promise<void> {
  const landed = new Set(moves.filter((move) => move.metadata !== undefined).map(partitionId));
  const unmarked = checks.filter((c) => c.loss === undefined && c.generation !== undefined && c.audit.marked !== c.generation &&
    (c.durable.marker?.generation === c.generation || landed.has(partitionId(c.ref))));
  await Promise.all(unmarked.map((c) => state.mark(c.ref, c.generation!)));
}

/** The run's result: each partition before and after, the moves, the reasons (skipped topics among them), the bytes trimmed. */
function summary(run: CommitRun, read: RunReadings, plan: CommitPlan, { moves, after }: Committed): CommitterResult {
  const nowMs = run.now();
  const skipped = read.allTracked.filter((ref) => read.missing.has(ref.topic)).map((ref) => ({
    topic: ref.topic,
    partition: ref.partition,
    code: PlanReasonCode.TopicMissing,
    detail: `topic ${ref.topic} no longer exists in Kafka: skipped`,
  }));
  return {
    groupId: run.committer.groupId,
    partitions: plan.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      committedBefore: p.committedBefore,
      frontier: p.frontier,
      highest: p.highest,
      committed: after.has(partitionId(p)) ? after.get(partitionId(p)) : p.committedBefore,
      stalled: p.stalled,
      frontierAgeMs: p.frontierSinceMs === undefined ? undefined : nowMs - p.frontierSinceMs,
    })),
    moves,
    reasons: [...plan.reasons, ...skipped],
    trimmedBytes: read.frontiers.reduce((sum, r) => sum + (r?.trimmedBytes ?? 0), 0),
  };
}

/**
 * What the group has committed on the topics that still exist, and which tracked topics no longer do. A
 * topic deleted between the two reads fails the run; the next run skips it.
 */
async function fetchExisting(
  committer: OffsetCommitter,
  topics: readonly string[],
): Promise<{ committed: CommittedOffset[]; missing: ReadonlySet<string> }> {
  try {
    return { committed: await committer.fetchCommitted(topics), missing: new Set() };
  } catch (error) {
    if (!(error instanceof TopicMissingError)) throw error;
    const missing = new Set(error.topics);
    return { committed: await committer.fetchCommitted(topics.filter((topic) => !missing.has(topic))), missing };
  }
}
