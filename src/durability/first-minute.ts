/**
 * The first minute of a partition, the one file that tells it (docs/ARCHITECTURE.md, "The first minute").
 *
 * Before the committer's first commit of a partition there is no marker in the completion group, so a state lost then
 * and made again by a later batch looks new, and the first commit (which stamps the generation) may pass records the
 * lost state held: a failed head in the retry path, its parked followers. It is closed in six steps, each in its place:
 *
 * 1. **born**: `admit` (`completion/scripts/admit-3.lua`) sets `born` in `meta` when it creates a state: the first offset
 *    it admitted. Trimming never moves it.
 * 2. **since**: the committer's first commit of the partition stamps a generation and writes the marker with
 *    `since` = `born` (`committer/durable-moves.ts`, `encodeMarker` in `marker.ts`): the lowest offset its commits vouch for.
 * 3. **report**: a retry copy whose lane is free, or whose lane's head lies past its origin, asks `suspectLoss`
 *    (`loss.ts`): an origin below `born` was admitted by an earlier state, so the copy is kept (written back,
 *    `retry/kept-for-recovery.ts`) and the loss reported with its origin (`lossReportedFrom`, the lowest kept).
 * 4. **rewind**: the committer finds the report (`findLoss`) and asks `recoveryStart` (below) where to recover from:
 *    the durable frontier, unless the reported origin lies below the marker's `since`. Then the commit that passed it
 *    vouched for nothing there: `<group>.lanes` is committed back to that origin first, with the marker, so a loss
 *    during the recovery still finds those records (`recoverPartition`, `recovery/recover.ts`), and the recovery starts there.
 * 5. **rebuild**: the rebuilt state is born at `min(since, start)` (`recoveryRange`, `recovery/plan.ts`): a copy of an origin the commits
 *    vouch for (at or above `since`, below the durable frontier) is terminal and stays stale, so stale copies never
 *    cause a recovery storm.
 * 6. **watch**: a lane held by the `hold` policy has no retry copy to report a loss, so while the partition is not
 *    `marked` (the committer read back a commit naming its generation) its head gets a watch copy
 *    (`watchHeldHead`, `lanes/lane-heads.ts`) that reports a loss if it finds the lane gone. A lane the retry function
 *    drains has none either once its copy is done (the drained head's lease and its park list are Redis' alone): the
 *    copy that starts the drain writes itself back as the lane's watch copy first (`retry/retry-path.ts`; the
 *    `watch` rules of `COPY_RULES`, `retry/copy-verdict.ts`). So is a retrying head advanced to its next attempt
 *    whose copy a crash kept from being written (its lease and payload are Redis' alone until the re-drive): the copy
 *    of the attempt before, delivered again, finds the later attempt at the head and watches the lane, not dropped.
 *
 * With nothing committed at all the recovery reads from the earliest offset and commits the rebuilt state's marker at
 * once (Kafka holds nothing below it), so a second loss before the next run is found against it.
 */
import type { CompletionPort } from '../ports/completion';
import type { PartitionRef } from '../ports/partition';
import type { DurableView } from './marker';

/**
 * How long a copy kept for a suspected loss, or a watch copy, waits before it looks again (docs/durability.md): a
 * loss is reported at most this long after it happened, within the committer's period at both its default
 * schedules (5 s under `serverless offline`, a minute deployed). A kept copy is written back at most once per this
 * interval, and a watch copy lives in the partition's first minute only: a few writes per lane.
 */
export const RECOVERY_RECHECK_MS = 5_000;

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

/**
 * Whether a head of the partition needs a watch copy now (step 6): only in its first minute, while the committer has
 * not recorded that the completion group's marker names the state (`marked`). A store that cannot tell has no first
 * minute to watch (the in-memory model loses nothing).
 */
export async function needsWatchCopy(store: Pick<CompletionPort, 'durablyMarked'>, ref: PartitionRef): Promise<boolean> {
  return store.durablyMarked !== undefined && !(await store.durablyMarked(ref));
}
