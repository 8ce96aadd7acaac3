import { completionGroupId, groupTag } from '../options/names';

export { completionGroupId };

/*
 * The committer's Redis keys and Kafka names, built here and nowhere else. Both Redis keys carry the
 * group's own hash tag `{kl:<group>}` (the one of the tracked-partitions set), so on Redis Cluster they
 * live in one slot; the group name is escaped as in `src/completion/keys.ts`.
 */
/** string: the token of the committer run holding the group's lease (`SET NX PX`), if any. */
export function committerLeaseKey(group: string): string {
  return `${groupTag(group)}:committer`;
}

/** hash: `<topic>\n<partition>` -> what the previous committer run saw (see `encodeReading`). */
export function committerReadingsKey(group: string): string {
  return `${groupTag(group)}:committer:readings`;
}
