/**
 * The one loss judge: whether a partition's Redis state was lost, in one reason type, by one table of rules (`RULES`)
 * asked for the committer's facts (`findLoss`: what the completion group holds) and for a retry copy's (`findCopyLoss`:
 * a copy whose lane it found free). Pure: the facts are read through the completion port (the audit, the origin's
 * done bit); `suspectLoss` reads them for a retry copy and reports what it finds; a recovery is the committer's to decide.
 */
import type { PartitionAudit, PartitionRef } from '../ports/partition';
import type { CompletionPort } from '../ports/completion';
import type { DurableView } from './marker';

/** Why a partition's Redis state is judged lost, in the words a log line and `status` use. */
export const LossReason = {
  /** The partition's `meta` is gone while Kafka's completion group carries a marker. */
  StateMissing: 'state-missing',
  /** The partition's `meta` was made again since (no generation, or another one): younger than the marker. */
  YoungerState: 'younger-state',
  /** Redis' highest admitted offset is below the one the marker recorded: its last writes were lost. */
  OlderState: 'older-state',
  /** The frontier is below the committed offset: done bits were lost. */
  DoneBitsLost: 'done-bits-lost',
  /**
   * A blocked lane's head lies below the committed offset: the committer never commits past a lane head, so the
   * state is older than the last commit (a snapshot restored, writes after it lost), and that lane would wait for
   * ever on a head whose retry copy was already consumed.
   */
  HeadBelowCommitted: 'head-below-committed',
  /**
   * A retrying lane head without a lease was due more than `OVERDUE_HEAD_MS` ago: its copy ran, and what the run
   * wrote (the head's release or next attempt) was lost, so nothing will ever move the lane again.
   */
  HeadOverdue: 'head-overdue',
  /**
   * The frontier is below what the event source mapping committed in its own consumer group: every record below
   * that was done or handed off before its invocation returned, so done bits were lost after the event source
   * moved past them, and nothing would ever deliver those records again.
   */
  PassedNotDone: 'passed-not-done',
  /** The `parked` count disagrees with the park lists of the blocked lanes: a park list was lost. */
  ParkListsLost: 'park-lists-lost',
  /** The lanes hash holds fewer (or more) lanes than were blocked and not freed: lane entries were lost. */
  LanesLost: 'lanes-lost',
  /** A retry copy found its lane gone while its origin was unknown to Redis or not done: writes were lost. */
  Reported: 'reported-by-retry-copy',
  /** A retry copy's origin lies below where the state was born: only an earlier state admitted it, and it was lost. */
  BornAfterOrigin: 'born-after-origin',
  /** A retry copy's origin lies above the highest offset the state admitted: the writes that admitted it were lost. */
  OriginUnknown: 'origin-unknown',
  /** A retry copy's origin is not done while its lane is free: a release sets it in the same step, so it was lost. */
  OriginNotDone: 'origin-not-done',
  /**
   * A retry copy's lane has its head below the copy's origin, or at its origin with an earlier attempt: a lane's head
   * only moves on, and a copy is written for its lane's head once the head holds the copy's attempt, so the state is
   * older than the copy (a snapshot restored, the writes after it lost) and the lane would wait on a head whose copy
   * was consumed. In a partition a recovery rebuilt, only when the copy's record first failed once that head was due:
   * a copy from before the rebuild (every rebuilt head is due at the recovery or later) is stale.
   */
  HeadBehindOrigin: 'head-behind-origin',
  /** A recovery is rebuilding the partition: a retry copy waits for it (nothing to report). */
  Recovering: 'recovering',
} as const;
export type LossReason = (typeof LossReason)[keyof typeof LossReason];

/**
 * How long past its due time a retrying head (no lease) may wait before the committer takes its lane as lost. Far
 * longer than any healthy retry path takes to deliver a due copy; a retry function down that long makes its
 * partitions recover (at-least-once), which is what it takes to move them again.
 */
export const OVERDUE_HEAD_MS = 60 * 60_000;

/** A retry copy's lane head that lies behind the copy (`HeadBehindOrigin`). */
export interface HeadBehind {
  readonly offset: number;
  readonly attempt: number;
  /** The copy's record first failed at or after the head's due time (so the copy is not from before a rebuild). */
  readonly failedSinceDue: boolean;
}

export interface Loss {
  readonly reason: LossReason;
  readonly detail: string;
}

/** What the committer knows of a partition when it judges it: its audit, its frontier, the completion group's view. */
export interface CommitterFacts {
  readonly by: 'committer';
  readonly audit: PartitionAudit;
  readonly frontier: number | undefined;
  readonly durable: DurableView;
  readonly nowMs: number;
  /** What the event source mapping committed in its own group, when known. */
  readonly delivered?: number | undefined;
}

/** What a retry copy whose lane is free (or whose lane's head lies past its origin) knows: the audit and its origin. */
export interface CopyFacts {
  readonly by: 'copy';
  readonly audit: PartitionAudit;
  readonly origin: number;
  /** The origin's done bit, when the state has one for it. */
  readonly originDone: boolean | undefined;
  readonly nowMs: number;
  /** The lane's head, when it lies behind the copy: below its origin, or at it with an earlier attempt. */
  readonly headBehind?: HeadBehind | undefined;
}

export type LossFacts = CommitterFacts | CopyFacts;

/** A rule's verdict: the detail of a loss, `WHOLE` (judged whole: no later rule is asked), or `undefined` (ask the next). */
const WHOLE = null;
type Verdict = string | typeof WHOLE | undefined;

interface LossRule {
  readonly reason: LossReason;
  /** Who asks it: the committer, a retry copy, or both. */
  readonly by: 'committer' | 'copy' | 'both';
  judge(facts: LossFacts): Verdict;
}

/** Narrows a rule to one asker's facts. */
function committer(judge: (facts: CommitterFacts) => Verdict): (facts: LossFacts) => Verdict {
  return (facts) => (facts.by === 'committer' ? judge(facts) : undefined);
}
function copy(judge: (facts: CopyFacts) => Verdict): (facts: LossFacts) => Verdict {
  return (facts) => (facts.by === 'copy' ? judge(facts) : undefined);
}

/**
 * The one table of loss rules, in the order they are asked; each says who asks it. A partition under recovery (its
 * fence standing) is the committer's to leave alone and a copy's to wait for; the four rules on the state itself
 * (recovering, missing, park lists, lanes) are asked by both.
 */
const RULES: readonly LossRule[] = [
  { reason: LossReason.Recovering, by: 'both', judge: ({ audit, nowMs }) => (audit.recoveringUntil !== undefined && audit.recoveringUntil > nowMs ? 'a recovery is rebuilding the partition' : undefined) },
  {
    reason: LossReason.Reported, by: 'committer', judge: committer(({ audit }) => {
      if (audit.lossReported === undefined) return undefined;
      const from = audit.lossReportedFrom === undefined ? '' : ` (origin ${audit.lossReportedFrom})`;
      return `a retry copy found its lane missing and its origin not known done${from} at ${new Date(audit.lossReported).toISOString()}`;
    }),
  },
  {
    reason: LossReason.StateMissing, by: 'both', judge: (facts) => {
      if (facts.audit.present) return undefined;
      if (facts.by === 'copy') return 'no state for the partition';
      const { marker, committed } = facts.durable;
      return marker === undefined ? WHOLE : `no state in Redis; the completion group has committed ${String(committed)} (generation ${marker.generation})`;
    },
  },
  {
    reason: LossReason.YoungerState, by: 'committer', judge: committer(({ audit, durable: { marker } }) => (marker !== undefined && audit.generation !== marker.generation
      ? `Redis holds generation ${audit.generation ?? 'none'}, the completion group ${marker.generation}: the state was made again since`
      : undefined)),
  },
  {
    reason: LossReason.OlderState, by: 'committer', judge: committer(({ audit, durable: { marker } }) => (marker !== undefined && audit.highest !== undefined && audit.highest < marker.highest
      ? `Redis has admitted up to ${audit.highest}, the completion group saw ${marker.highest}`
      : undefined)),
  },
  {
    reason: LossReason.BornAfterOrigin, by: 'copy', judge: copy(({ audit, origin }) => (audit.born !== undefined && origin < audit.born
      ? `offset ${origin} is below where the state was born, ${audit.born}: an earlier state admitted it and was lost`
      : undefined)),
  },
  {
    reason: LossReason.OriginUnknown, by: 'copy', judge: copy(({ audit, origin }) => (audit.highest !== undefined && origin > audit.highest
      ? `offset ${origin} is above the highest admitted, ${audit.highest}`
      : undefined)),
  },
  {
    reason: LossReason.DoneBitsLost, by: 'committer', judge: committer(({ frontier, durable: { committed } }) => (committed !== undefined && frontier !== undefined && frontier < committed
      ? `frontier ${frontier} is below the committed ${committed}`
      : undefined)),
  },
  {
    reason: LossReason.HeadBelowCommitted, by: 'committer', judge: committer(({ audit, durable: { committed } }) => (committed !== undefined && audit.lowestHead !== undefined && audit.lowestHead < committed
      ? `a lane is blocked on offset ${audit.lowestHead}, below the committed ${committed}: the state is older than the last commit`
      : undefined)),
  },
  {
    reason: LossReason.HeadOverdue, by: 'committer', judge: committer(({ audit, nowMs }) => (audit.oldestDueAtMs !== undefined && nowMs - audit.oldestDueAtMs > OVERDUE_HEAD_MS
      ? `a retrying lane head was due at ${new Date(audit.oldestDueAtMs).toISOString()} and has not moved since`
      : undefined)),
  },
  {
    reason: LossReason.PassedNotDone, by: 'committer', judge: committer(({ frontier, delivered }) => (delivered !== undefined && frontier !== undefined && frontier < delivered
      ? `frontier ${frontier} is below ${delivered}, where the event source committed: done bits were lost`
      : undefined)),
  },
  {
    reason: LossReason.ParkListsLost, by: 'both', judge: ({ audit }) => (audit.parked !== audit.parkedInLists
      ? `${audit.parked} records counted parked, ${audit.parkedInLists} in the park lists of the blocked lanes`
      : undefined),
  },
  {
    reason: LossReason.LanesLost, by: 'both', judge: ({ audit }) => (audit.openLanes !== audit.lanes
      ? `${audit.openLanes} lanes blocked and not freed, ${audit.lanes} in the lanes hash`
      : undefined),
  },
  { reason: LossReason.OriginNotDone, by: 'copy', judge: copy(({ origin, originDone }) => (originDone === false ? `offset ${origin} is not done while its lane is free` : undefined)) },
  {
    // A rebuilt lane starts again from the durable frontier, below the copies written before the recovery: those are
    // stale. Every rebuilt head is due at the recovery or later, so a copy whose record first failed since its head
    // was due is not one of them.
    reason: LossReason.HeadBehindOrigin, by: 'copy', judge: copy(({ audit, origin, headBehind }) => (headBehind !== undefined && (audit.recoveries === 0 || headBehind.failedSinceDue)
      ? `its lane's head is offset ${headBehind.offset} attempt ${headBehind.attempt}, behind the copy (origin ${origin}): the state is older than the copy`
      : undefined)),
  },
];

/**
 * Pure: the one loss judge. Asks the rules of `RULES` its asker asks, in order; the first that finds a loss names it,
 * one that finds the state whole ends the judgement.
 *
 * @example
 * judgeLoss({ by: 'copy', audit, origin: 41, originDone: undefined, nowMs: Date.now() }); // { reason: 'origin-unknown', ... }
 */
export function judgeLoss(facts: LossFacts): Loss | undefined {
  for (const rule of RULES) {
    if (rule.by !== 'both' && rule.by !== facts.by) continue;
    const verdict = rule.judge(facts);
    if (verdict === WHOLE) return undefined;
    if (verdict !== undefined) return { reason: rule.reason, detail: verdict };
  }
  return undefined;
}

/**
 * The committer's question: whether a partition's Redis state was lost, judged from its audit, its frontier, what the
 * completion group holds and, when known, what the event source mapping committed (`delivered`). A partition under
 * recovery (its fence standing) is not judged: the recovery is rebuilding it.
 *
 * @example
 * const durable = { committed: 20, marker: { generation: 'a1', highest: 19 } };
 * findLoss({ audit: { ...audit, present: false }, frontier: undefined, durable, nowMs: Date.now() });
 * // { reason: 'state-missing', detail: '...' }
 */
export function findLoss(facts: Omit<CommitterFacts, 'by'>): Loss | undefined {
  const loss = judgeLoss({ by: 'committer', ...facts });
  return loss?.reason === LossReason.Recovering ? undefined : loss;
}

/**
 * A retry copy's question, whose lane is free (or whose lane's head lies past its origin): why its partition's state
 * looks lost, or `undefined` when the copy is simply stale. A keyed copy's lane leaves the lanes hash only through a
 * release, which sets the head's done bit in the same step; so a free lane with the origin unknown to the state (above
 * its highest admitted offset) or not done says Redis lost writes, as do no state at all and counters that disagree
 * with the data. So does an origin below where the state was born (`born`): only an earlier state admitted it, and a
 * state is replaced only by a recovery (born no higher than the lowest offset the completion group vouches for, so a
 * copy below that is terminal and never gets here) or by a loss. `originDone`: the origin's done bit, when the state
 * has one for it. `headBehind`: the lane's head, when it lies behind the copy, and whether the copy's record first
 * failed since that head was due (`HeadBehindOrigin`). A recovery under
 * way is `Recovering`: the copy waits, nothing is reported.
 *
 * @example
 * findCopyLoss({ audit, origin: 41, originDone: undefined, nowMs: Date.now() });
 * // { reason: 'origin-unknown', detail: 'offset 41 is above the highest admitted, 39' }
 */
export function findCopyLoss(facts: Omit<CopyFacts, 'by'>): Loss | undefined {
  return judgeLoss({ by: 'copy', ...facts });
}

/** What a retry copy asks `suspectLoss` about: its origin, now, and its lane's head when it lies behind the copy. */
export type CopyQuestion = Pick<CopyFacts, 'origin' | 'nowMs' | 'headBehind'>;

/** A loss a retry copy found: `firstReport` when its report is news to the partition's `meta` (see `suspectLoss`). */
export interface CopyLoss extends Loss {
  /**
   * No loss was reported for the partition yet, or only from a higher origin: this copy's report is the one that
   * tells the committer. A loss already reported (by this copy on an earlier pass, or by another copy) is `false`, so
   * the error log and the metric say it once per loss, not once per pass (docs/durability.md).
   */
  readonly firstReport: boolean;
}

/**
 * A retry copy's loss check: reads the facts through the completion port, judges them (`findCopyLoss`) and reports a
 * loss in the partition's `meta` (not a recovery under way: it rebuilds the partition already). A store without the
 * facts never suspects.
 *
 * @example
 * const loss = await suspectLoss(store, originRef, { origin: 41, nowMs: Date.now() }); // { reason: 'origin-unknown', firstReport: true, ... } or undefined
 */
export async function suspectLoss(store: Pick<CompletionPort, 'originState' | 'reportLoss'>, ref: PartitionRef, question: CopyQuestion): Promise<CopyLoss | undefined> {
  if (store.originState === undefined) return undefined;
  const { origin } = question;
  const { audit, originDone } = await store.originState(ref, origin);
  const loss = findCopyLoss({ ...question, audit, originDone });
  if (loss === undefined) return undefined;
  if (loss.reason === LossReason.Recovering) return { ...loss, firstReport: false };
  const firstReport = audit.lossReported === undefined || (audit.lossReportedFrom !== undefined && origin < audit.lossReportedFrom);
  await store.reportLoss?.(ref, origin);
  return { ...loss, firstReport };
}
