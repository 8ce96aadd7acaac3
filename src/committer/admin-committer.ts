import type { Admin } from 'kafkajs';
import { completionGroupId } from './keys';
import { movesByTopic, parseFetchedOffsets, type OffsetCommitter } from './offset-committer';
import type { CommitMove, CommittedOffset } from './types';

/** The part of a kafkajs `Admin` this committer uses. */
export type CommitterAdmin = Pick<Admin, 'fetchOffsets' | 'setOffsets'>;

/**
 * Commits to the completion group `<group>.lanes` through the admin API. That group has no live members:
 * kafkajs `admin.setOffsets` only works on such a group (it joins it with a short-lived member of its own,
 * seeks, and leaves). In the AWS topology the event source mapping commits its own group; this one shows
 * the framework's true progress to standard lag tools and is what `kafka-lanes rewind` moves back to.
 *
 * Each call costs about 5 s per topic: kafkajs (2.2.4) commits through a member that joins the group,
 * seeks, and leaves only after one empty fetch (`maxWaitTimeInMs`, not configurable through the admin).
 * In kafkajs 2.2.4 two overlapping calls on one group cannot both commit one partition in one generation
 * (a commit carries its member's generation, and a member seeks only the partitions assigned to it), but
 * one of them may silently commit nothing: `runCommitter` serializes runs with a lease and reads every
 * commit back.
 *
 * @example
 * const admin = kafka.admin();
 * await admin.connect();
 * const committer = new AdminOffsetCommitter(admin, 'orders'); // commits group 'orders.lanes'
 * await committer.commit([{ topic: 'orders', partition: 0, from: undefined, to: 42 }]);
 */
export class AdminOffsetCommitter implements OffsetCommitter {
  readonly groupId: string;
  readonly #admin: CommitterAdmin;

  /** `group` is the framework's group; the committed group is `completionGroupId(group)`. */
  constructor(admin: CommitterAdmin, group: string) {
    this.#admin = admin;
    this.groupId = completionGroupId(group);
  }

  async fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]> {
    if (topics.length === 0) return [];
    return parseFetchedOffsets(await this.#admin.fetchOffsets({ groupId: this.groupId, topics: [...topics] }));
  }

  async commit(moves: readonly CommitMove[]): Promise<void> {
    // setOffsets takes one topic per call (its member subscribes to that topic only).
    for (const [topic, topicMoves] of movesByTopic(moves)) {
      await this.#admin.setOffsets({
        groupId: this.groupId,
        topic,
        partitions: topicMoves.map(({ partition, to }) => ({ partition, offset: String(to) })),
      });
    }
  }
}
