import type { Admin } from 'kafkajs';
import type { CompletionStore } from '../completion/store';
import { retryTopic } from '../options/names';
import { readBlockedLanes } from './status';

/**
 * The figures a group's alarms watch, read where the committer already looks every run: its tracked partitions.
 * The committer publishes them as metrics (OldestBlockedLaneAge, BlockedLanes, HeldLanes, CommittedLag); the
 * CloudWatch alarms and dashboard the serverless plugin adds read those.
 */
export interface GroupFigures {
  /** Age of the lane blocked the longest (ms); 0 when no lane is blocked. */
  readonly oldestBlockedLaneAgeMs: number;
  readonly blockedLanes: number;
  readonly heldLanes: number;
  /** Records of the source partitions not yet committed by `<group>.lanes`: end offset minus committed, summed. */
  readonly committedLag: number;
}

/**
 * @example
 * const figures = await readGroupFigures({ group, store, admin, partitions: result.partitions });
 */
export async function readGroupFigures({
  group,
  store,
  admin,
  partitions,
  nowMs = Date.now(),
}: {
  group: string;
  store: Pick<CompletionStore, 'groupState'>;
  admin: Pick<Admin, 'fetchTopicOffsets'>;
  /** The tracked partitions with what `<group>.lanes` has committed after the run. */
  partitions: ReadonlyArray<{ topic: string; partition: number; committed: number | undefined; frontier: number | undefined }>;
  nowMs?: number;
}): Promise<GroupFigures> {
  const [oldest, held] = await Promise.all([
    readBlockedLanes({ group, store, partitions, query: { sort: 'age', limit: 1 } }),
    readBlockedLanes({ group, store, partitions, query: { state: 'held', limit: 1 } }),
  ]);
  const sources = partitions.filter((p) => !p.topic.startsWith(retryTopic(group, '')));
  let committedLag = 0;
  for (const topic of new Set(sources.map((p) => p.topic))) {
    const ends = new Map((await admin.fetchTopicOffsets(topic)).map((entry) => [entry.partition, Number(entry.high)]));
    for (const p of sources.filter((s) => s.topic === topic)) {
      const end = ends.get(p.partition);
      const consumedTo = p.committed ?? p.frontier;
      if (end !== undefined && consumedTo !== undefined) committedLag += Math.max(0, end - consumedTo);
    }
  }
  const first = oldest.lanes[0];
  return {
    oldestBlockedLaneAgeMs: first === undefined ? 0 : Math.max(0, nowMs - first.sinceMs),
    blockedLanes: oldest.total,
    heldLanes: held.total,
    committedLag,
  };
}
