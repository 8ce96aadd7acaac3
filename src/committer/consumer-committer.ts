import type { Consumer } from 'kafkajs';
import { fetchCommittedOffsets, movesByTopic, type CommitLease, type OffsetCommitter, type OffsetReader } from './offset-committer';
import type { CommitMove, CommittedOffset } from './types';

export interface ConsumerOffsetCommitterOptions {
  /**
   * A running kafkajs consumer (after `consumer.run`) that is a member of `groupId`. It must run with
   * `autoCommit: false`: its own commits of processed offsets would otherwise race this committer's and
   * could move the group backwards, or past records that are not terminal (G2).
   */
  readonly consumer: Pick<Consumer, 'commitOffsets'>;
  /** Reads what the group has committed (a consumer has no API for that). */
  readonly admin: OffsetReader;
  /** The consumer's group. */
  readonly groupId: string;
}

/**
 * Commits as a member of a live consumer group, through the member's own consumer: for the local
 * emulator and the self-hosted worker, whose group has members, so no commit from outside the group
 * (`setOffsets`, `MemberlessOffsetCommitter`) can write it. Kafka checks the member's generation on
 * each commit, so a member fenced off by a rebalance cannot commit at all.
 *
 * @example
 * const consumer = kafka.consumer({ groupId: 'orders' });
 * await consumer.run({ autoCommit: false, eachBatch: process });
 * const committer = new ConsumerOffsetCommitter({ consumer, admin, groupId: 'orders' });
 */
export class ConsumerOffsetCommitter implements OffsetCommitter {
  readonly groupId: string;
  readonly #consumer: Pick<Consumer, 'commitOffsets'>;
  readonly #admin: OffsetReader;

  constructor(options: ConsumerOffsetCommitterOptions) {
    this.#consumer = options.consumer;
    this.#admin = options.admin;
    this.groupId = options.groupId;
  }

  async fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]> {
    return fetchCommittedOffsets(this.#admin, this.groupId, topics);
  }

  async commit(moves: readonly CommitMove[], lease?: CommitLease): Promise<void> {
    const offsets = [...movesByTopic(moves).values()]
      .flat()
      .map(({ topic, partition, to }) => ({ topic, partition, offset: String(to) }));
    if (offsets.length === 0) return;
    await lease?.renew();
    await this.#consumer.commitOffsets(offsets);
  }
}
