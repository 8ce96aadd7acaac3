import type { LaneHead } from '../ports/lane-head';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { ScopeFigures, ScopeGiven } from '../engine/run-scope';
import type { RetryTask } from './admit';
import { placeOf } from './copy-verdict';
import { suspectLoss, type CopyLoss } from '../durability/loss';

/**
 * Whether a retry copy whose lane is free (or whose lane's head lies past its origin, or behind the copy) finds its partition's Redis
 * state lost; a loss is reported in the partition's `meta` for the committer. Said once per loss: the copy whose
 * report is news logs it as an error and counts it (`RetryCopiesHeldForRecovery`); a copy finding the loss already
 * reported (itself on an earlier pass, or another copy) logs at info level and counts nothing.
 */
export async function copyFindsLoss(scope: Pick<ScopeGiven, 'store' | 'now'> & Pick<ScopeFigures, 'count'>, logger: Logger, task: RetryTask, head?: LaneHead): Promise<CopyLoss | undefined> {
  // Its record first failed once the head was due: not a copy from before a recovery rebuilt the lane (every head of
  // a rebuilt lane is due at the recovery or later), which is stale.
  const headBehind = head !== undefined && placeOf(task, head) === 'behind'
    ? { offset: head.offset, attempt: head.attempt, failedSinceDue: task.firstFailureAtMs >= head.dueAtMs }
    : undefined;
  const loss = await suspectLoss(scope.store, task.originRef, { origin: task.origin.offset, nowMs: scope.now(), headBehind });
  if (loss === undefined) return undefined;
  const fields = { origin: task.origin, attempt: task.attempt, reason: loss.reason, why: loss.detail };
  if (loss.firstReport) {
    scope.count('keptForRecovery');
    logger.error("retry copy whose lane is missing while its partition's Redis state looks lost: kept, not dropped; the committer recovers the partition", fields);
  } else {
    logger.info('retry copy kept for a recovery already reported (or under way): it looks again when due', fields);
  }
  return loss;
}
