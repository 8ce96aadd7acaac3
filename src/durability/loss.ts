/**
 * The one loss judge: whether a partition's Redis state was lost, in one reason type, judged by the committer from
 * what the completion group holds (`findLoss`) and by a retry copy whose lane it found free (`findCopyLoss`). Both are
 * pure: the facts come from `completion/` (the audit, the origin's done bit); `suspectLoss` reads them through the
 * completion port for a retry copy and reports what it finds; a recovery is the committer's to decide.
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

export interface Loss {
  readonly reason: LossReason;
  readonly detail: string;
}

/**
 * Pure: whether a partition's Redis state was lost, judged from its audit, its frontier, what the completion
 * group holds and, when known, what the event source mapping committed (`delivered`). A partition under recovery (its fence standing) is not judged: the recovery is rebuilding it.
 *
 * @example
 * findLoss({ ...audit, present: false }, undefined, { committed: 20, marker: { generation: 'a1', highest: 19 } });
 * // { reason: 'state-missing', detail: '...' }
 */
export function findLoss(audit: PartitionAudit, frontier: number | undefined, durable: DurableView, nowMs: number, delivered?: number): Loss | undefined {
  if (audit.recoveringUntil !== undefined && audit.recoveringUntil > nowMs) return undefined;
  const { marker, committed } = durable;
  if (audit.lossReported !== undefined) {
    const from = audit.lossReportedFrom === undefined ? '' : ` (origin ${audit.lossReportedFrom})`;
    return { reason: LossReason.Reported, detail: `a retry copy found its lane missing and its origin not known done${from} at ${new Date(audit.lossReported).toISOString()}` };
  }
  if (!audit.present) {
    return marker === undefined
      ? undefined
      : { reason: LossReason.StateMissing, detail: `no state in Redis; the completion group has committed ${String(committed)} (generation ${marker.generation})` };
  }
  if (marker !== undefined && audit.generation !== marker.generation) {
    return {
      reason: LossReason.YoungerState,
      detail: `Redis holds generation ${audit.generation ?? 'none'}, the completion group ${marker.generation}: the state was made again since`,
    };
  }
  if (marker !== undefined && audit.highest !== undefined && audit.highest < marker.highest) {
    return { reason: LossReason.OlderState, detail: `Redis has admitted up to ${audit.highest}, the completion group saw ${marker.highest}` };
  }
  if (committed !== undefined && frontier !== undefined && frontier < committed) {
    return { reason: LossReason.DoneBitsLost, detail: `frontier ${frontier} is below the committed ${committed}` };
  }
  if (committed !== undefined && audit.lowestHead !== undefined && audit.lowestHead < committed) {
    return { reason: LossReason.HeadBelowCommitted, detail: `a lane is blocked on offset ${audit.lowestHead}, below the committed ${committed}: the state is older than the last commit` };
  }
  if (audit.oldestDueAtMs !== undefined && nowMs - audit.oldestDueAtMs > OVERDUE_HEAD_MS) {
    return { reason: LossReason.HeadOverdue, detail: `a retrying lane head was due at ${new Date(audit.oldestDueAtMs).toISOString()} and has not moved since` };
  }
  if (delivered !== undefined && frontier !== undefined && frontier < delivered) {
    return { reason: LossReason.PassedNotDone, detail: `frontier ${frontier} is below ${delivered}, where the event source committed: done bits were lost` };
  }
  if (audit.parked !== audit.parkedInLists) {
    return { reason: LossReason.ParkListsLost, detail: `${audit.parked} records counted parked, ${audit.parkedInLists} in the park lists of the blocked lanes` };
  }
  if (audit.openLanes !== audit.lanes) {
    return { reason: LossReason.LanesLost, detail: `${audit.openLanes} lanes blocked and not freed, ${audit.lanes} in the lanes hash` };
  }
  return undefined;
}

/**
 * Pure: why a partition's state looks lost to a retry copy whose lane is free (or whose lane's head lies past its
 * origin), or `undefined` when the copy is simply stale. A keyed copy's lane leaves the lanes hash only through a
 * release, which sets the head's done bit in the same step; so a free lane with the origin unknown to the state (above
 * its highest admitted offset) or not done says Redis lost writes, as do no state at all and counters that disagree
 * with the data. So does an origin below where the state was born (`born`): only an earlier state admitted it, and a
 * state is replaced only by a recovery (born no higher than the lowest offset the completion group vouches for, so a
 * copy below that is terminal and never gets here) or by a loss. `originDone`: the origin's done bit, when the state
 * has one for it. A recovery under way is `Recovering`: the copy waits, nothing is reported.
 *
 * @example
 * findCopyLoss(audit, 41, undefined, Date.now()); // { reason: 'origin-unknown', detail: 'offset 41 is above the highest admitted, 39' }
 */
export function findCopyLoss(audit: PartitionAudit, origin: number, originDone: boolean | undefined, nowMs: number): Loss | undefined {
  if (audit.recoveringUntil !== undefined && audit.recoveringUntil > nowMs) return { reason: LossReason.Recovering, detail: 'a recovery is rebuilding the partition' };
  if (!audit.present) return { reason: LossReason.StateMissing, detail: 'no state for the partition' };
  if (audit.born !== undefined && origin < audit.born) {
    return { reason: LossReason.BornAfterOrigin, detail: `offset ${origin} is below where the state was born, ${audit.born}: an earlier state admitted it and was lost` };
  }
  if (audit.highest !== undefined && origin > audit.highest) return { reason: LossReason.OriginUnknown, detail: `offset ${origin} is above the highest admitted, ${audit.highest}` };
  if (audit.parked !== audit.parkedInLists) return { reason: LossReason.ParkListsLost, detail: `${audit.parked} records counted parked, ${audit.parkedInLists} in the park lists` };
  if (audit.openLanes !== audit.lanes) return { reason: LossReason.LanesLost, detail: `${audit.openLanes} lanes counted blocked, ${audit.lanes} in the lanes hash` };
  if (originDone === false) return { reason: LossReason.OriginNotDone, detail: `offset ${origin} is not done while its lane is free` };
  return undefined;
}

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
 * const loss = await suspectLoss(store, originRef, 41, Date.now()); // { reason: 'origin-unknown', firstReport: true, ... } or undefined
 */
export async function suspectLoss(store: Pick<CompletionPort, 'originState' | 'reportLoss'>, ref: PartitionRef, origin: number, nowMs: number): Promise<CopyLoss | undefined> {
  if (store.originState === undefined) return undefined;
  const { audit, originDone } = await store.originState(ref, origin);
  const loss = findCopyLoss(audit, origin, originDone, nowMs);
  if (loss === undefined) return undefined;
  if (loss.reason === LossReason.Recovering) return { ...loss, firstReport: false };
  const firstReport = audit.lossReported === undefined || (audit.lossReportedFrom !== undefined && origin < audit.lossReportedFrom);
  await store.reportLoss?.(ref, origin);
  return { ...loss, firstReport };
}
