/**
 * What a recovery asks of the completion state, injected: the rebuild steps of a partition, done bits, a head's
 * move (its lease off once its copy is written), and the tracked set. `redisRecoveryStore` is it on Redis.
 */
import { PartitionRebuild } from '../completion/rebuild';
import type { RedisClient } from '../completion/scripts';
import { CompletionStore } from '../completion/store';
import { trackPartitions } from '../completion/tracked';
import type { CompletionPort } from '../ports/completion';
import type { PartitionRef } from '../ports/partition';

export interface RecoveryStore extends Pick<CompletionPort, 'markDone' | 'advance' | 'release' | 'durablyMarked'> {
  /** The rebuild steps of one partition: fence, begin, records, end. */
  rebuild(ref: PartitionRef): Pick<PartitionRebuild, 'fence' | 'begin' | 'records' | 'end'>;
  /** Adds partitions to the tracked set again: it may have been lost with the rest. */
  track(refs: readonly PartitionRef[]): Promise<void>;
}

/**
 * The recovery's store on one Redis client.
 *
 * @example
 * await recoverPartition({ parts: { store: redisRecoveryStore(redis), kafka, options, sink }, ref, from: 20 });
 */
export function redisRecoveryStore(redis: RedisClient): RecoveryStore {
  const store = new CompletionStore(redis);
  return {
    markDone: (ref, offsets) => store.markDone(ref, offsets),
    advance: (ref, lane, expected, next) => store.advance(ref, lane, expected, next),
    release: (ref, lane, expectedHeadOffset, nextAttempt, nowMs, leaseUntilMs, hold) => store.release(ref, lane, expectedHeadOffset, nextAttempt, nowMs, leaseUntilMs, hold),
    durablyMarked: (ref) => store.durablyMarked(ref),
    rebuild: (ref) => new PartitionRebuild(redis, ref),
    track: (refs) => trackPartitions(redis, refs),
  };
}
