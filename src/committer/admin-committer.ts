import type { Admin } from 'kafkajs';
import { completionGroupId } from '../options/names';
import { fetchCommittedOffsets, movesByTopic, type CommitLease, type OffsetCommitter } from './offset-committer';
import type { CommitMove, CommittedOffset } from './types';

/** The part of a kafkajs `Admin` this committer uses. */
export type CommitterAdmin = Pick<Admin, 'fetchOffsets' | 'setOffsets' | 'listTopics'>;

/**
 * Commits to the completion group `<group>.lanes` through kafkajs' public admin API only. Slow: prefer
 * `MemberlessOffsetCommitter`, which commits every topic in one request; this one is for those who will
 * not rely on kafkajs internals.
 *
 * kafkajs `admin.setOffsets` works only on a group with no live members: it joins the group with a
 * short-lived member of its own, seeks, and leaves only after one empty fetch (`maxWaitTimeInMs`, not
 * configurable through the admin). Each topic costs about 5 s (kafkajs 2.2.4), so the run's lease is
 * renewed before each topic. Two overlapping calls on one group cannot both
 * commit one partition in one generation (a commit carries its member's generation, and a member seeks
 * only the partitions assigned to it), but one of them may silently commit nothing: `runCommitter`
 * serializes runs with a lease and reads every commit back.
 *
 * @example
 * const admin = kafka.admin();
 * await admin.connect();
 * await runCommitter({ store, group: 'orders', committer: new AdminOffsetCommitter(admin, 'orders') });
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
    return fetchCommittedOffsets(this.#admin, this.groupId, topics);
  }

  async commit(moves: readonly CommitMove[], lease?: CommitLease): Promise<void> {
    // setOffsets takes one topic per call (its member subscribes to that topic only).
    for (const [topic, topicMoves] of movesByTopic(moves)) {
      await lease?.renew();
      await this.#admin.setOffsets({
        groupId: this.groupId,
        topic,
        partitions: topicMoves.map(({ partition, to }) => ({ partition, offset: String(to) })),
      });
    }
  }
}
