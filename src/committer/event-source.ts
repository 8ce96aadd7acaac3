import { retryTierOf } from '../options/names';
import { fetchCommittedOffsets, type OffsetReader } from './offset-committer';
import type { CommittedOffset } from './types';

/**
 * What a group's event source mappings have committed in their own consumer groups, for `runCommitter`'s
 * `eventSource`: the source trigger commits in `<group>` and each retry tier's trigger in `<group>.retry.<tier>` (the
 * plugin names them so). An offset committed there means every record below it was done or handed off before its
 * invocation returned; a frontier below it tells done bits lost (docs/durability.md).
 *
 * @example
 * runCommitter({ ..., eventSource: eventSourcePositions(() => admin, 'orders') });
 */
export function eventSourcePositions(reader: () => Promise<OffsetReader>, group: string): (topics: readonly string[]) => Promise<CommittedOffset[]> {
  return async (topics) => {
    const byGroup = new Map<string, string[]>();
    for (const topic of topics) {
      const consumerGroup = retryTierOf(group, topic) === undefined ? group : topic;
      byGroup.set(consumerGroup, [...(byGroup.get(consumerGroup) ?? []), topic]);
    }
    const admin = await reader();
    const fetched = await Promise.all([...byGroup].map(([consumerGroup, groupTopics]) => fetchCommittedOffsets(admin, consumerGroup, groupTopics)));
    return fetched.flat();
  };
}
