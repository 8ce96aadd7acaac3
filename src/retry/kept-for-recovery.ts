import type { ScopeFigures, ScopeGiven } from '../engine/run-scope';
import type { RetryTask } from './admit';
import { RECOVERY_RECHECK_MS } from '../completion/loss-suspect';

/**
 * A retry copy whose lane is free is stale only if its origin's state is whole. When Redis lost it, the copy is
 * not dropped: it goes back to its tier for a while (the committer's next run recovers the partition, after
 * which the copy is judged again: its head is back, or it is stale for good). Logged as an error and counted
 * (`RetryCopiesHeldForRecovery`). Returns whether the copy was kept.
 */
export async function keptForRecovery(scope: ScopeGiven & ScopeFigures, task: RetryTask, writeBack: (task: RetryTask) => Promise<void>): Promise<boolean> {
  const why = await scope.store.lossSuspected?.(task.originRef, task.origin.offset);
  if (why === undefined) return false;
  scope.count('keptForRecovery');
  scope.logger.error("retry copy whose lane is missing while its partition's Redis state looks lost: kept, not dropped; the committer recovers the partition", {
    origin: task.origin, attempt: task.attempt, why,
  });
  await writeBack({ ...task, writeBack: { ...task.writeBack!, dueAtMs: Math.max(task.dueAtMs, scope.now() + RECOVERY_RECHECK_MS) } });
  return true;
}
