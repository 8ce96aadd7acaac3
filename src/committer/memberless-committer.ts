import { sleep } from '../deadline';
import { exponentialDelay } from '../options/backoff';
import type { Kafka } from 'kafkajs';
import { ConfigError, LanesError, describeValue } from '../errors';
import {
  CommitNotAppliedError,
  GroupHasMembersError,
  KafkaInternalsChangedError,
  OffsetCommitError,
} from './errors';
import { messageOf } from '../describe';
import { KafkaErrorCode, kafkaErrorOf, ownKafkaErrorOf, type KafkaErrorInfo } from '../kafka-errors';
import {
  clusterFactoryOf,
  field,
  type InternalCluster,
  type OffsetCommitAck,
  type OffsetCommitRequest,
} from './kafkajs-internals';
import { completionGroupId } from '../options/names';
import { explainAbsentTopics, movesByTopic, parseFetchedOffsets, throwIfRefused, type CommitLease, type OffsetCommitter } from './offset-committer';
import { partitionId } from './plan';
import type { CommitMove, CommittedOffset } from './types';

/** kafkajs' own retry defaults (src/retry/defaults.js): about 9 s of waits over 5 retries. */
export const MEMBERLESS_COMMITTER_DEFAULTS = {
  retries: 5,
  initialRetryMs: 300,
  maxRetryMs: 30_000,
} as const;

export interface MemberlessOffsetCommitterOptions {
  /**
   * How many times to look the group coordinator up again and resend when it moved or is still loading
   * the group (`NOT_COORDINATOR`, `COORDINATOR_LOAD_IN_PROGRESS`, `COORDINATOR_NOT_AVAILABLE`); default 5.
   */
  readonly retries?: number;
  /** The wait before the first retry, in ms, doubled (±20 %) on each further one; default 300. */
  readonly initialRetryMs?: number;
  /** The longest wait between two retries, in ms; default 30 s. */
  readonly maxRetryMs?: number;
}

/** Kafka's answers to a commit by no member when the group has live members. */
const GROUP_HAS_MEMBERS: ReadonlySet<number> = new Set([
  KafkaErrorCode.UnknownMemberId,
  KafkaErrorCode.IllegalGeneration,
  KafkaErrorCode.RebalanceInProgress,
  KafkaErrorCode.FencedInstanceId,
]);

/** Kafka's answers when the request reached a broker that is not (yet) the group's coordinator. */
const COORDINATOR_MOVED: ReadonlySet<number> = new Set([
  KafkaErrorCode.NotCoordinator,
  KafkaErrorCode.CoordinatorLoadInProgress,
  KafkaErrorCode.CoordinatorNotAvailable,
]);

/**
 * The OffsetCommit request of a commit by no member: generation `-1` and an empty member id, all moves of
 * all topics in one request, offsets as strings. Checks the moves as `movesByTopic` does.
 *
 * @example
 * offsetCommitRequest('orders.lanes', [{ topic: 'orders', partition: 0, from: 40, to: 42 }]);
 * // { groupId: 'orders.lanes', groupGenerationId: -1, memberId: '', retentionTime: -1,
 * //   topics: [{ topic: 'orders', partitions: [{ partition: 0, offset: '42' }] }] }
 */
export function offsetCommitRequest(groupId: string, moves: readonly CommitMove[]): OffsetCommitRequest {
  return {
    groupId,
    groupGenerationId: -1,
    memberId: '',
    retentionTime: -1,
    topics: [...movesByTopic(moves)].map(([topic, topicMoves]) => ({
      topic,
      partitions: topicMoves.map(({ partition, to, metadata }) => ({ partition, offset: String(to), ...(metadata === undefined ? {} : { metadata }) })),
    })),
  };
}

/**
 * The wait before commit retry number `attempt + 1` (a refused or failed offset commit): `initialRetryMs` doubled per attempt, ±20 % at random, at
 * most `maxRetryMs` (the shape of kafkajs' retrier).
 *
 * @example
 * commitRetryDelayMs(2, { initialRetryMs: 300, maxRetryMs: 30_000 }, () => 0.5); // 1200
 */
export function commitRetryDelayMs(
  attempt: number,
  { initialRetryMs, maxRetryMs }: { readonly initialRetryMs: number; readonly maxRetryMs: number },
  random: () => number = Math.random,
): number {
  return exponentialDelay({ initialMs: initialRetryMs, multiplier: 2, maxMs: maxRetryMs }, attempt, 0.8 + 0.4 * random());
}

/** The error of a commit Kafka refused with `kafka`'s error: `retriable` as kafkajs said, `cause` what was thrown, if anything. */
function refusal(groupId: string, kafka: KafkaErrorInfo, { retriable, cause }: { readonly retriable: boolean; readonly cause?: unknown }): OffsetCommitError {
  const kafkaError = kafka.type;
  if (GROUP_HAS_MEMBERS.has(kafka.code)) {
    return new GroupHasMembersError(
      `Kafka refused a commit to group ${groupId} by no member: the group has live members (${kafkaError}). ` +
        'Nothing was committed. The completion group must have no consumers: does something consume with ' +
        `group id ${groupId}?`,
      { groupId, kafkaError, cause },
    );
  }
  const said = cause === undefined ? '' : ` (${messageOf(cause)})`;
  return new OffsetCommitError(`Kafka refused the commit to group ${groupId}: ${kafkaError}${said}`, {
    groupId,
    kafkaError,
    retriable,
    cause,
  });
}

/**
 * The error to throw for a failed member-less commit to `groupId`: `GroupHasMembersError` when Kafka
 * refused it because the group has live members, the committer's own errors as they are, and an
 * `OffsetCommitError` for anything else (its `retriable` taken from the kafkajs error).
 *
 * @example
 * commitFailure(kafkajsError, 'orders.lanes'); // GroupHasMembersError for UNKNOWN_MEMBER_ID
 */
export function commitFailure(error: unknown, groupId: string): LanesError {
  if (error instanceof LanesError) return error;
  const retriable = field(error, 'retriable') === true;
  const kafka = kafkaErrorOf(error);
  if (kafka !== undefined) return refusal(groupId, kafka, { retriable, cause: error });
  return new OffsetCommitError(`the commit to group ${groupId} failed: ${messageOf(error)}`, {
    groupId,
    retriable,
    cause: error,
  });
}

/** Checks that Kafka acknowledged every partition of the request without an error. */
export function checkAcks(request: OffsetCommitRequest, acks: readonly OffsetCommitAck[]): void {
  // kafkajs throws on the first partition with an error; this is for a response that reached us anyway.
  const refused = acks.find((ack) => ack.errorCode !== 0);
  if (refused !== undefined) {
    throw refusal(request.groupId, { type: `error code ${refused.errorCode}`, code: refused.errorCode }, { retriable: false });
  }
  const acked = new Set(acks.map(partitionId));
  const missing = request.topics.flatMap(({ topic, partitions }) =>
    partitions
      .filter(({ partition }) => !acked.has(partitionId({ topic, partition })))
      .map(({ partition }) => `${topic}-${partition}`),
  );
  if (missing.length > 0) {
    throw new CommitNotAppliedError(
      `Kafka did not acknowledge the commit to group ${request.groupId} of ${missing.join(', ')}`,
    );
  }
}

/**
 * Runs `work`, then `close` whatever happened. When `work` failed, its error is the one thrown (a failed
 * close then adds nothing worth more); otherwise a failed close is thrown.
 */
async function thenClose<T>(work: () => Promise<T>, close: () => Promise<void>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  await close();
  return result;
}

function expectInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    const what = min === 0 ? 'a non-negative integer' : 'a positive integer';
    throw new ConfigError(`Expected \`${name}\` to be ${what}, got ${describeValue(value)}`);
  }
}

/**
 * Commits to the completion group `<group>.lanes` the way Kafka's own AdminClient
 * (`alterConsumerGroupOffsets`) does: one OffsetCommit request with generation `-1` and no member id,
 * sent to the group's coordinator, for all moves of all topics at once (a few ms, where kafkajs'
 * `admin.setOffsets` takes about 5 s per topic). Kafka takes such a commit only while the group has no
 * live members, and refuses it otherwise: this committer then throws `GroupHasMembersError` and nothing
 * is committed, so a consumer that joined the completion group by mistake is never overwritten.
 *
 * kafkajs has no public call for it: the request goes through kafkajs internals (see
 * `kafkajs-internals.ts`, written against kafkajs 2.2.4), checked when the committer is built and on
 * each use; if they changed, it throws `KafkaInternalsChangedError`. Each commit uses a short-lived
 * connection of its own; each read uses a new kafkajs admin (public `admin.fetchOffsets`), because an
 * admin that once read a topic since deleted fails every later read (kafkajs 2.2.4).
 *
 * @example
 * const kafka = new Kafka({ clientId: 'committer', brokers });
 * const committer = new MemberlessOffsetCommitter(kafka, 'orders'); // commits group 'orders.lanes'
 * await committer.commit([
 *   { topic: 'orders', partition: 0, from: 40, to: 42 },
 *   { topic: 'orders.retry.1', partition: 0, from: undefined, to: 7 },
 * ]);
 * await committer.fetchCommitted(['orders']); // [{ topic: 'orders', partition: 0, offset: 42 }]
 */
export class MemberlessOffsetCommitter implements OffsetCommitter {
  readonly groupId: string;
  readonly #kafka: Pick<Kafka, 'admin'>;
  // Looked up once, so a kafkajs that changed fails when the committer is built, not at its first commit.
  readonly #createCluster: (options: { allowAutoTopicCreation: boolean }) => InternalCluster;
  readonly #retry: Required<MemberlessOffsetCommitterOptions>;

  /** `group` is the framework's group; the committed group is `completionGroupId(group)`. */
  constructor(kafka: Pick<Kafka, 'admin'>, group: string, options: MemberlessOffsetCommitterOptions = {}) {
    if (typeof group !== 'string' || group === '') {
      throw new ConfigError(`Expected \`group\` to be a non-empty string, got ${describeValue(group)}`);
    }
    const retry = { ...MEMBERLESS_COMMITTER_DEFAULTS, ...options };
    expectInteger('retries', retry.retries, 0);
    expectInteger('initialRetryMs', retry.initialRetryMs, 1);
    expectInteger('maxRetryMs', retry.maxRetryMs, 1);
    this.#kafka = kafka;
    this.#createCluster = clusterFactoryOf(kafka);
    this.#retry = retry;
    this.groupId = completionGroupId(group);
  }

  async fetchCommitted(topics: readonly string[]): Promise<CommittedOffset[]> {
    if (topics.length === 0) return [];
    const admin = this.#kafka.admin();
    return thenClose(
      async () => {
        await admin.connect();
        // Listing the topics also loads the broker list, so fetchOffsets finds the coordinator at once
        // (a new kafkajs client has none and waits out one retry, ~300 ms, before it asks again).
        // Kafka lists only the topics this principal may describe: an absent topic is deleted or refused, and
        // a refused one must fail the run, not be skipped as deleted.
        const existing = new Set(await admin.listTopics());
        const absent = topics.filter((topic) => !existing.has(topic));
        if (absent.length > 0) await explainAbsentTopics(this.#kafka, this.groupId, absent);
        try {
          return parseFetchedOffsets(await admin.fetchOffsets({ groupId: this.groupId, topics: [...topics] }));
        } catch (error) {
          throwIfRefused(error, this.groupId, topics);
          throw error;
        }
      },
      () => admin.disconnect(),
    );
  }

  async fetchAllCommitted(): Promise<CommittedOffset[]> {
    const admin = this.#kafka.admin();
    return thenClose(
      async () => {
        await admin.connect();
        await admin.listTopics();
        try {
          return parseFetchedOffsets(await admin.fetchOffsets({ groupId: this.groupId }));
        } catch (error) {
          throwIfRefused(error, this.groupId, []);
          throw error;
        }
      },
      () => admin.disconnect(),
    );
  }

  async commit(moves: readonly CommitMove[], lease?: CommitLease): Promise<void> {
    const request = offsetCommitRequest(this.groupId, moves);
    if (request.topics.length === 0) return;
    await lease?.renew();
    const cluster = this.#createCluster({ allowAutoTopicCreation: false });
    await thenClose(
      async () => {
        try {
          await cluster.connect();
          // Loads the broker list (a new cluster has none: the coordinator lookup would wait out one
          // retry), and fails before anything is committed if a topic no longer exists.
          await cluster.addMultipleTargetTopics(request.topics.map(({ topic }) => topic));
          checkAcks(request, await this.#sendToCoordinator(cluster, request));
        } catch (error) {
          throw commitFailure(error, this.groupId);
        }
      },
      () => cluster.disconnect(),
    );
  }

  /** Sends the request to the group's coordinator, looking it up again while it moves or loads. */
  async #sendToCoordinator(cluster: InternalCluster, request: OffsetCommitRequest): Promise<OffsetCommitAck[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        const coordinator = await cluster.findGroupCoordinator({ groupId: request.groupId });
        return await coordinator.offsetCommit(request);
      } catch (error) {
        // Only an error Kafka sent for this request: a kafkajs wrapper around one means kafkajs' own
        // retrier (inside the coordinator lookup) has retried it already.
        const code = ownKafkaErrorOf(error)?.code;
        const moved = code !== undefined && COORDINATOR_MOVED.has(code);
        if (!moved || attempt >= this.#retry.retries || error instanceof KafkaInternalsChangedError) throw error;
        await sleep(commitRetryDelayMs(attempt, this.#retry));
      }
    }
  }
}
