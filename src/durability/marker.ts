import { randomBytes } from 'node:crypto';
import type { PartitionAudit } from '../completion/audit';

/**
 * The durable marker: what the committer writes into the commit metadata of the completion group
 * `<group>.lanes` next to each committed offset, `kl1:<generation>:<highest>`. Kafka keeps it as durably as the
 * offset itself, so it tells the next committer run (or `kafka-lanes recover`) what Redis must still hold:
 * the generation stamped into the partition's `meta` when its state was made whole, and the highest offset it
 * had admitted then.
 */
export interface DurableMarker {
  readonly generation: string;
  readonly highest: number;
  /**
   * The lowest offset the commits vouch for: where the first state stamped with a generation was born (the
   * committer's first commit of the partition stamps it), lowered by a recovery that started below it. Offsets
   * below it were never seen by a state whose loss a marker could reveal, so a retry copy of one that finds its
   * lane free reports a loss; the committer then recovers from there (`recoveryStart`). Absent in older markers.
   */
  readonly since?: number | undefined;
}

const PREFIX = 'kl1';

/** A fresh generation: 12 hex digits, never `:`. */
export function newGeneration(): string {
  return randomBytes(6).toString('hex');
}

/**
 * @example
 * encodeMarker({ generation: '8c1f0a2b3c4d', highest: 41 }); // 'kl1:8c1f0a2b3c4d:41'
 * encodeMarker({ generation: '8c1f0a2b3c4d', highest: 41, since: 0 }); // 'kl1:8c1f0a2b3c4d:41:0'
 */
export function encodeMarker(marker: DurableMarker): string {
  const since = marker.since === undefined ? '' : `:${marker.since}`;
  return `${PREFIX}:${marker.generation}:${marker.highest}${since}`;
}

/** The marker in a commit's metadata; `undefined` for none (a commit of an older version, or of someone else). */
export function decodeMarker(metadata: string | null | undefined): DurableMarker | undefined {
  if (typeof metadata !== 'string') return undefined;
  const [prefix, generation, highest, since, ...rest] = metadata.split(':');
  if (prefix !== PREFIX || rest.length > 0 || generation === undefined || !/^[0-9a-f]{1,32}$/.test(generation)) return undefined;
  const value = Number(highest);
  if (!Number.isSafeInteger(value) || value < -1) return undefined;
  if (since === undefined) return { generation, highest: value };
  const from = since === '' ? Number.NaN : Number(since);
  return Number.isSafeInteger(from) && from >= 0 ? { generation, highest: value, since: from } : undefined;
}

/** Where a recovery reads the records again from, and whether the completion group must first be moved back there. */
export interface RecoveryStart {
  /** The first offset read again (`undefined`: the earliest Kafka holds). */
  readonly from: number | undefined;
  /** The offset the completion group commits before the rebuild, when a commit passed records that were not terminal. */
  readonly rewindTo?: number;
  /** The lowest offset the commits vouch for, when known: the rebuilt state is born at it or at its start, the lower. */
  readonly since: number | undefined;
}

/**
 * Pure: where a recovery starts. Normally at the durable frontier (what the completion group committed). A retry copy
 * reporting an origin below the marker's `since` proves that the committer's first commit of the partition, made
 * before any marker existed, passed records an earlier state had admitted and lost: the recovery starts at that
 * origin, and the completion group is moved back there first (the one move backwards: that commit was not true),
 * so a loss during the recovery still finds those records. A copy below the committed offset but at or above
 * `since` is terminal: it moves nothing (no recovery storm from stale copies).
 *
 * @example
 * recoveryStart({ committed: 20, marker: { generation: 'a1', highest: 19, since: 10 } }, 3); // from 3, rewindTo 3
 */
export function recoveryStart(durable: DurableView, reportedFrom: number | undefined): RecoveryStart {
  const { committed, marker } = durable;
  const since = marker?.since;
  if (committed !== undefined && since !== undefined && reportedFrom !== undefined && reportedFrom < since && reportedFrom < committed) {
    return { from: reportedFrom, rewindTo: reportedFrom, since: reportedFrom };
  }
  // Commits without `since` (an older version's) do not tell where their guarantee starts: taken as vouching for all.
  return { from: committed, since: committed !== undefined && since === undefined ? 0 : since };
}

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

/** What Kafka's completion group holds for a partition: its committed offset and marker, if any. */
export interface DurableView {
  readonly committed: number | undefined;
  readonly marker: DurableMarker | undefined;
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
