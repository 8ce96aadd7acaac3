/**
 * Unordered mode's dedupe of retry copies by (origin, attempt): a record without a lane has no head to check, so
 * its copies are checked against one entry per origin offset (claim-copy-1.lua), in one script call per copy.
 */
import type { EngineTask, ScopeGiven, ScopeSettling } from '../engine/run-scope';
import type { CompletionPort } from '../ports/completion';
import type { PartitionRef } from '../ports/partition';
import type { CopyClaimRequest } from '../ports/lane-head';

interface CopyTask extends EngineTask {
  readonly originRef: PartitionRef;
  readonly from: 'copy' | 'drained';
}

/** `true`: the copy took its attempt and runs; `false`: the record is terminal, a later attempt ran, or a twin ran. */
export async function claimUnorderedCopy(store: Pick<CompletionPort, 'claimCopy'>, effectsTtlMs: number, task: CopyTask): Promise<boolean> {
  if (store.claimCopy === undefined || task.from !== 'copy') return true;
  const claim = await store.claimCopy(task.originRef, copyClaimOf(effectsTtlMs, task, false));
  return claim === 'claimed';
}

/** The copy succeeded: the record is terminal, and a later copy of any attempt does nothing. */
export async function unorderedCopyDone(scope: Pick<ScopeGiven, 'store'> & Pick<ScopeSettling, 'markDone'>, effectsTtlMs: number, task: CopyTask): Promise<void> {
  if (task.from !== 'copy') return;
  // The origin's done bit again: set at its hand-off, it may have been lost with its process before the flush, and
  // a redelivery of the origin must not run the record again once it is terminal (nor find its steps deleted).
  scope.markDone(task.originRef, task.origin.offset, true);
  await scope.store.claimCopy?.(task.originRef, copyClaimOf(effectsTtlMs, task, true));
}

/** A retry copy's own place, `topic:partition:offset`: what names the copy that took a claim. */
export function copyIdOf(task: EngineTask): string {
  return `${task.ref.topic}:${task.ref.partition}:${task.offset}`;
}

/** The copy's claim of its attempt (`done`: once it succeeded), kept as long as its steps' results. */
function copyClaimOf(effectsTtlMs: number, task: CopyTask, done: boolean): CopyClaimRequest {
  return { offset: task.origin.offset, attempt: task.attempt, copy: copyIdOf(task), ttlMs: effectsTtlMs, done };
}
