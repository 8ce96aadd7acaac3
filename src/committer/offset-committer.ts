import type { Admin, Kafka } from 'kafkajs';
import { LanesError } from '../errors';
import { OffsetFetchRefusedError, TopicMissingError } from './errors';
import { KafkaErrorCode, kafkaErrorOf } from '../kafka-errors';
import { partitionId, parseCommittedOffset } from './plan';
import type { CommitMove, CommittedOffset } from './types';

/**
 * The lease of a committer run (`CommitterLease`), as a committer sees it: renewed before each request
 * that commits, so a commit of many requests (one per topic, say) never outlives the lease.
 */
export interface CommitLease {
  /** Extends the run's lease; throws `LeaseLostError` once the run no longer holds it. */
  renew(): Promise<void>;
}

/**
 * One way of committing offsets to a Kafka consumer group. Implementations write exactly the moves they
 * are given; they do not compare-and-set (Kafka cannot), so the caller serializes runs and plans each
 * run's moves against offsets fetched inside that serialization (see `runCommitter`).
 *
 * @example
 * // A committer of your own: one request for all moves, the lease renewed right before it.
 * const committer: OffsetCommitter = {
 *   groupId: 'orders.lanes',
 *   fetchCommitted: (topics) => fetchCommittedOffsets(admin, 'orders.lanes', topics),
 *   async commit(moves, lease) {
 *     await lease?.renew();
 *     await send(moves);
 *   },
 * };
 */
export interface OffsetCommitter {
  /** The Kafka consumer group this committer writes. */
  readonly groupId: string;
  /**
   * What the group has committed on every partition of these topics (`undefined`: nothing). Throws
   * `TopicMissingError` listing the topics that no longer exist, if any, and `OffsetFetchRefusedError` when Kafka
   * refuses to describe a topic or the group to this principal (never a refused topic as a missing one).
   */
  fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]>;
  /**
   * Commits forward moves (`to > from`); throws on any other move. `runCommitter` passes its run's lease:
   * the committer renews it before each request it sends (and stops when that throws).
   */
  commit(moves: readonly CommitMove[], lease?: CommitLease): Promise<void>;
  /**
   * Everything the group has committed, on every topic, with metadata: how a committer run finds partitions whose
   * Redis state (tracked set included) was lost. Optional: without it, only the tracked partitions are checked.
   */
  fetchAllCommitted?(): Promise<CommittedOffset[]>;
}

/** The part of a kafkajs `Admin` that reads what a group has committed. */
export type OffsetReader = Pick<Admin, 'fetchOffsets' | 'listTopics'>;

/**
 * What `groupId` has committed on every partition of `topics`, through kafkajs `admin.fetchOffsets`.
 * kafkajs fails the whole call when one topic does not exist (`UNKNOWN_TOPIC_OR_PARTITION`); then the
 * topics are listed, and the missing ones are reported in a `TopicMissingError`.
 *
 * @example
 * await fetchCommittedOffsets(admin, 'orders.lanes', ['orders']); // [{ topic: 'orders', partition: 0, offset: 42 }]
 */
export async function fetchCommittedOffsets(
  admin: OffsetReader,
  groupId: string,
  topics: readonly string[],
): Promise<CommittedOffset[]> {
  if (topics.length === 0) return [];
  try {
    return parseFetchedOffsets(await admin.fetchOffsets({ groupId, topics: [...topics] }));
  } catch (error) {
    throwIfRefused(error, groupId, topics);
    if (kafkaErrorOf(error)?.code !== KafkaErrorCode.UnknownTopicOrPartition) throw error;
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length > 0) {
      const message = `topics no longer exist in Kafka: ${missing.join(', ')}`;
      throw new TopicMissingError(message, { topics: missing, cause: error });
    }
    // kafkajs 2.2.4 keeps every topic an admin has read in its metadata targets: once one of them is
    // deleted, each later metadata refresh of that admin, so each fetchOffsets, fails.
    throw new LanesError(
      `reading what group ${groupId} has committed failed with UNKNOWN_TOPIC_OR_PARTITION although ` +
        `${topics.join(', ')} exist: a kafkajs admin that once read a topic since deleted fails every later ` +
        'fetchOffsets; connect a new admin',
      { retriable: false, cause: error },
    );
  }
}

/** Kafka's refusals of an offset fetch: the principal may not describe a topic, or the group. */
const REFUSED: ReadonlySet<number> = new Set([KafkaErrorCode.TopicAuthorizationFailed, KafkaErrorCode.GroupAuthorizationFailed]);

function refusedError(groupId: string, topics: readonly string[], kafkaError: string, cause: unknown): OffsetFetchRefusedError {
  const grant = kafkaError === 'GROUP_AUTHORIZATION_FAILED'
    ? `DescribeGroup on group ${groupId} (Kafka ACL DESCRIBE on the group)`
    : 'DescribeTopic and ReadData on them (Kafka ACLs DESCRIBE and READ on the topics)';
  return new OffsetFetchRefusedError(
    `Kafka refused to tell the committer what group ${groupId} has committed on ${topics.length === 0 ? 'any topic' : topics.join(', ')} (${kafkaError}): ` +
      `their partitions cannot be committed. Grant the committer ${grant}`,
    { groupId, topics, kafkaError, cause },
  );
}

/**
 * Throws `OffsetFetchRefusedError` when `error` is Kafka refusing the read of `groupId`'s offsets on `topics`, and
 * a `LanesError` naming both causes when kafkajs found no coordinator: it reports a refused FindCoordinator
 * (`GROUP_AUTHORIZATION_FAILED`, no DESCRIBE on the group) as "Failed to find group coordinator", without Kafka's error.
 */
export function throwIfRefused(error: unknown, groupId: string, topics: readonly string[]): void {
  const kafka = kafkaErrorOf(error);
  if (kafka !== undefined && REFUSED.has(kafka.code)) throw refusedError(groupId, topics, kafka.type, error);
  if (error instanceof Error && error.name === 'KafkaJSGroupCoordinatorNotFound') {
    throw new LanesError(
      `no coordinator of group ${groupId} answered (kafkajs: ${error.message}): Kafka has none available, or refuses ` +
        `this principal DescribeGroup on group ${groupId} (Kafka ACL DESCRIBE on the group); kafkajs reports both alike`,
      { retriable: true, cause: error },
    );
  }
}

/**
 * Why topics are absent from a topic list: Kafka lists only the topics the principal may describe, so an absent
 * topic is either deleted or refused. Each is asked for by name (a new admin each, without retries: a kafkajs admin
 * that once asked for a missing topic fails every later metadata request): `TOPIC_AUTHORIZATION_FAILED` throws
 * `OffsetFetchRefusedError` naming the refused topics and the group, `UNKNOWN_TOPIC_OR_PARTITION` a
 * `TopicMissingError`; a topic that answers (created since the list) is neither.
 *
 * @example
 * await explainAbsentTopics(kafka, 'orders.lanes', ['orders.retry.5s']); // throws for a refused or deleted topic
 */
export async function explainAbsentTopics(kafka: Pick<Kafka, 'admin'>, groupId: string, absent: readonly string[]): Promise<void> {
  const refused: Array<{ topic: string; error: unknown }> = [];
  const missing: string[] = [];
  for (const topic of absent) {
    const admin = kafka.admin({ retry: { retries: 0 } });
    try {
      await admin.connect();
      await admin.fetchTopicMetadata({ topics: [topic] });
    } catch (error) {
      const code = kafkaErrorOf(error)?.code;
      if (code === KafkaErrorCode.TopicAuthorizationFailed) refused.push({ topic, error });
      else if (code === KafkaErrorCode.UnknownTopicOrPartition) missing.push(topic);
      else throw error;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
  if (refused.length > 0) {
    throw refusedError(groupId, refused.map((r) => r.topic), 'TOPIC_AUTHORIZATION_FAILED', refused[0]!.error);
  }
  if (missing.length > 0) throw new TopicMissingError(`topics no longer exist in Kafka: ${missing.join(', ')}`, { topics: missing });
}

/** The reply of kafkajs `admin.fetchOffsets`. */
export type FetchedOffsets = ReadonlyArray<{
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string; readonly metadata?: string | null }>;
}>;

/** Flattens a kafkajs `fetchOffsets` reply; `-1` (nothing committed) becomes `undefined`. */
export function parseFetchedOffsets(fetched: FetchedOffsets): CommittedOffset[] {
  return fetched.flatMap(({ topic, partitions }) =>
    partitions.map(({ partition, offset, metadata }) => ({
      topic, partition, offset: parseCommittedOffset(offset, { topic, partition }), ...(typeof metadata === 'string' && metadata !== '' ? { metadata } : {}),
    })),
  );
}

/**
 * Checks that every move goes forward and names each partition once, and groups the moves by topic.
 * A move that is not forward is a programming error: the plan never makes one. The one exception is a `rewind`
 * with its marker, made by a recovery (`recoverLost`): it may move back.
 */
export function movesByTopic(moves: readonly CommitMove[]): Map<string, CommitMove[]> {
  const seen = new Set<string>();
  const byTopic = new Map<string, CommitMove[]>();
  for (const move of moves) {
    const where = `${move.topic}-${move.partition}`;
    if (!Number.isSafeInteger(move.to) || move.to < 0) {
      throw new RangeError(`Expected the move of ${where} to go to a non-negative integer, got ${String(move.to)}`);
    }
    const rewind = move.rewind === true && move.from !== undefined && move.to < move.from && move.metadata !== undefined;
    if (move.from !== undefined && !rewind && !(move.to > move.from || (move.to === move.from && move.metadata !== undefined))) {
      throw new RangeError(`Expected the move of ${where} to go forward, got ${move.from} -> ${move.to}`);
    }
    const id = partitionId(move);
    if (seen.has(id)) throw new RangeError(`Expected one move per partition, got two for ${where}`);
    seen.add(id);
    const list = byTopic.get(move.topic);
    if (list === undefined) byTopic.set(move.topic, [move]);
    else list.push(move);
  }
  return byTopic;
}
