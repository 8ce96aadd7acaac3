import type { LaneHead } from '../ports/lane-head';
import type { PathParts, ScopeFigures, ScopeGiven } from '../engine/run-scope';
import type { RetryTask } from './admit';
import { RECOVERY_RECHECK_MS } from '../durability/first-minute';
import { suspectLoss, type CopyLoss } from '../durability/loss';

/**
 * Whether a retry copy whose lane is free (or whose lane's head lies past its origin, or behind the copy) finds its partition's Redis
 * state lost; a loss is reported in the partition's `meta` for the committer. Said once per loss: the copy whose
 * report is news logs it as an error and counts it (`RetryCopiesHeldForRecovery`); a copy finding the loss already
 * reported (itself on an earlier pass, or another copy) logs at info level and counts nothing.
 */
export async function copyFindsLoss(scope: ScopeGiven & PathParts & ScopeFigures, task: RetryTask, head?: LaneHead): Promise<CopyLoss | undefined> {
  const behind = head !== undefined && (head.offset < task.origin.offset || (head.offset === task.origin.offset && head.attempt < task.attempt));
  // Its record first failed once the head was due: not a copy from before a recovery rebuilt the lane (every head of
  // a rebuilt lane is due at the recovery or later), which is stale.
  const headBehind = behind ? { offset: head.offset, attempt: head.attempt, failedSinceDue: task.firstFailureAtMs >= head.dueAtMs } : undefined;
  const loss = await suspectLoss(scope.store, task.originRef, { origin: task.origin.offset, nowMs: scope.now(), headBehind });
  if (loss === undefined) return undefined;
  const fields = { origin: task.origin, attempt: task.attempt, reason: loss.reason, why: loss.detail };
  if (loss.firstReport) {
    scope.count('keptForRecovery');
    scope.logger.error("retry copy whose lane is missing while its partition's Redis state looks lost: kept, not dropped; the committer recovers the partition", fields);
  } else {
    scope.logger.info('retry copy kept for a recovery already reported (or under way): it looks again when due', fields);
  }
  return loss;
}

/**
 * A due retry copy whose lane is free is stale only if its origin's state is whole. When Redis lost it, the copy is
 * not dropped: it goes back to its tier due `RECOVERY_RECHECK_MS` from now (the committer recovers the partition
 * meanwhile, after which the copy is judged again: its head is back, or it is stale for good). A copy not due yet is
 * never written back for this (`RetryPath.prepare` waits for its due time first), so a kept copy is written back at
 * most once per recheck interval. Returns whether the copy was kept.
 */
export async function keptForRecovery(scope: ScopeGiven & PathParts & ScopeFigures, task: RetryTask, writeBack: (task: RetryTask) => Promise<void>, head?: LaneHead): Promise<boolean> {
  if ((await copyFindsLoss(scope, task, head)) === undefined) return false;
  await writeBack({ ...task, writeBack: { ...task.writeBack!, dueAtMs: Math.max(task.dueAtMs, scope.now() + RECOVERY_RECHECK_MS) } });
  return true;
}
