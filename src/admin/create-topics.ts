import { deadlineSignal, sleep, untilAborted } from '../deadline';
import type { Admin, ITopicConfig } from 'kafkajs';
import { ConfigError, describeValue } from '../errors';
import { messageOf } from '../describe';
import { KafkaErrorCode, kafkaErrorOf } from '../kafka-errors';
import { TopicsNotReadyError } from './errors';

/** What `waitForTopicsReady` uses of a kafkajs `Admin`. */
export type ReadyAdmin = Pick<Admin, 'fetchTopicMetadata' | 'fetchTopicOffsets'>;

/** What `createTopicsReady` uses of a kafkajs `Admin`. */
export type TopicsAdmin = ReadyAdmin & Pick<Admin, 'createTopics' | 'listTopics'>;

export interface CreateTopicsReadyOptions {
  /** Longest the whole call may take, in ms. Default 30,000. */
  readonly timeoutMs?: number;
}

export interface CreateTopicsReadyResult {
  /** Topics that did not exist when the call began, now created, in the order given. */
  readonly created: string[];
  /** Topics that existed already, in the order given (their configuration is left as it is). */
  readonly existing: string[];
}

export const CREATE_TOPICS_READY_DEFAULTS = { timeoutMs: 30_000 } as const;

/**
 * Answers worth waiting out right after a topic is created: on KRaft a broker may not host the new partitions
 * yet (`UNKNOWN_TOPIC_OR_PARTITION`, "This server does not host this topic-partition"), know their leader, or
 * act as the leader its metadata already names (`NOT_LEADER_OR_FOLLOWER`); kafkajs 2.2.4 gives up on the first
 * (its leader wait retries only `LEADER_NOT_AVAILABLE`).
 */
const PASSING: ReadonlySet<number> = new Set([
  KafkaErrorCode.UnknownTopicOrPartition,
  KafkaErrorCode.LeaderNotAvailable,
  KafkaErrorCode.NotLeaderOrFollower,
  KafkaErrorCode.ReplicaNotAvailable,
  KafkaErrorCode.RequestTimedOut,
  KafkaErrorCode.NotController,
]);

/**
 * kafkajs 2.2.4's metadata of the whole cluster (what `admin.listTopics` reads) comes back `null` when no broker
 * answered it (its broker pool swallows their errors), and `listTopics` then throws a TypeError. On a busy
 * broker that happens while any topic of the cluster, not only these, is between leaders: worth waiting out.
 */
class NoMetadataError extends Error {
  constructor(cause: unknown) {
    super(`no broker answered the metadata request (${messageOf(cause)})`, { cause });
    this.name = new.target.name;
  }
}

async function listTopics(admin: Pick<Admin, 'listTopics'>): Promise<Set<string>> {
  try {
    return new Set(await admin.listTopics());
  } catch (error) {
    throw error instanceof TypeError ? new NoMetadataError(error) : error;
  }
}

function passes(error: unknown): boolean {
  if (error instanceof NoMetadataError || error instanceof StepTimeoutError) return true;
  const code = kafkaErrorOf(error)?.code;
  if (code !== undefined) return PASSING.has(code);
  // kafkajs' own leader wait timing out ("Timed out while waiting for topic leaders"): this call keeps waiting.
  for (let e: unknown = error, depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    if ((e as { name?: unknown }).name === 'KafkaJSTimeout') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

type TopicMetadata = Awaited<ReturnType<ReadyAdmin['fetchTopicMetadata']>>['topics'][number];

/**
 * What keeps each topic from being written to, from a metadata reading: a partition without a leader or with an
 * error, or, for a topic just created (not in `existing`), fewer partitions than asked for. Empty when every
 * topic is ready. Pure.
 *
 * @example
 * notReady([{ topic: 'a', numPartitions: 2 }], [{ name: 'a', partitions: [{ partitionId: 0, leader: 1, ... }] }]);
 * // ['a: 1 of 2 partitions']
 */
export function notReady(
  topics: readonly ITopicConfig[],
  metadata: readonly TopicMetadata[],
  existing: ReadonlySet<string> = new Set(),
): string[] {
  const byName = new Map(metadata.map((topic) => [topic.name, topic]));
  const problems: string[] = [];
  for (const { topic, numPartitions } of topics) {
    const found = byName.get(topic);
    if (found === undefined) {
      problems.push(`${topic}: not in the metadata`);
      continue;
    }
    // An existing topic keeps the partitions it has: asking for more does not add any.
    const expected = !existing.has(topic) && numPartitions !== undefined && numPartitions > 0 ? numPartitions : 1;
    if (found.partitions.length < expected) problems.push(`${topic}: ${found.partitions.length} of ${expected} partitions`);
    const leaderless = found.partitions
      .filter((p) => p.partitionErrorCode !== 0 || p.leader < 0)
      .map((p) => p.partitionId)
      .sort((a, b) => a - b);
    if (leaderless.length > 0) problems.push(`${topic}: no leader for partition(s) ${leaderless.join(', ')}`);
  }
  return problems;
}

function validate(topics: ReadonlyArray<Pick<ITopicConfig, 'topic'>>, timeoutMs: number): void {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw new ConfigError(`Expected \`timeoutMs\` to be a positive integer, got ${describeValue(timeoutMs)}`);
  }
  if (!Array.isArray(topics) || topics.length === 0) {
    throw new ConfigError(`Expected \`topics\` to be a non-empty array of topic configs, got ${describeValue(topics)}`);
  }
  const names = topics.map((topic) => topic?.topic);
  const bad = names.findIndex((name) => typeof name !== 'string' || name === '');
  if (bad >= 0) {
    throw new ConfigError(`Expected every topic to have a non-empty \`topic\` name, got ${describeValue(names[bad])}`);
  }
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new ConfigError(`Expected each topic once, got \`${twice}\` twice`);
}

/** A topic to wait for: its name, or its name and the partition count it must reach. */
export type ReadyTopic = string | { readonly topic: string; readonly numPartitions?: number | undefined };

/**
 * One pass of the readiness check: `undefined` when every topic is ready, else what is not. Throws what
 * kafkajs throws.
 */
async function readiness(admin: ReadyAdmin, topics: readonly ITopicConfig[], existing: ReadonlySet<string>): Promise<string | undefined> {
  const names = topics.map(({ topic }) => topic);
  const problems = notReady(topics, (await admin.fetchTopicMetadata({ topics: names })).topics, existing);
  if (problems.length > 0) return problems.join('; ');
  // A KRaft broker's metadata names a partition's leader before that broker serves it: a write then fails with
  // NOT_LEADER_OR_FOLLOWER. Reading every partition's offsets (ListOffsets, answered only by a serving leader)
  // proves each one takes writes, without writing anything.
  await Promise.all(names.map((name) => admin.fetchTopicOffsets(name)));
  return undefined;
}

class StepTimeoutError extends Error {
  constructor() {
    super('a Kafka request was still unanswered at the deadline');
    this.name = new.target.name;
  }
}

/** `work`, or a `StepTimeoutError` once `ms` have passed (the abandoned work goes on in the background). */
function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  return untilAborted(work, deadlineSignal(Math.max(0, ms)), () => new StepTimeoutError());
}

/**
 * Runs `step` until it returns a result, waiting out passing answers (100 ms, doubling up to 1 s) until the
 * deadline; then throws `TopicsNotReadyError` with the last problem.
 */
async function untilReady<T>(
  names: readonly string[],
  timeoutMs: number,
  step: () => Promise<{ readonly done: T } | { readonly problem: string }>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let problem = 'never read';
  let lastError: unknown;
  for (let wait = 100; ; wait = Math.min(wait * 2, 1_000)) {
    try {
      // kafkajs calls retry on their own for tens of seconds: one step never outlives the deadline.
      const result = await withinMs(step(), deadline - Date.now());
      if ('done' in result) return result.done;
      problem = result.problem;
    } catch (error) {
      if (!passes(error)) throw error;
      lastError = error;
      problem = messageOf(error);
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new TopicsNotReadyError(
        `Topics ${names.map((name) => `\`${name}\``).join(', ')} not ready within ${timeoutMs} ms: ${problem}`,
        { topics: names, cause: lastError },
      );
    }
    await sleep(Math.min(wait, left));
  }
}

/**
 * Waits until Kafka's metadata names a leader for every partition of `topics` (and, for a topic given with
 * `numPartitions`, shows that many partitions) and every such leader serves its partition, so a write right
 * after succeeds: after creating topics (see `createTopicsReady`) or adding partitions. Waits out the answers a
 * KRaft broker gives for a moment after such a change (`UNKNOWN_TOPIC_OR_PARTITION`, `LEADER_NOT_AVAILABLE`,
 * `NOT_LEADER_OR_FOLLOWER`), 100 ms doubling up to 1 s, until `timeoutMs`.
 *
 * Reading offsets makes the admin track the topics: kafkajs 2.2.4 then fails that admin's later metadata
 * requests once one of them is deleted; use a short-lived admin.
 *
 * @throws TopicsNotReadyError if the topics are not ready within `timeoutMs` (naming what is missing).
 * @throws the kafkajs error of any other failure (not authorized, ...).
 * @example
 * await admin.createPartitions({ topicPartitions: [{ topic: 'orders', count: 12 }] });
 * await waitForTopicsReady(admin, [{ topic: 'orders', numPartitions: 12 }], { timeoutMs: 30_000 });
 */
export async function waitForTopicsReady(
  admin: ReadyAdmin,
  topics: readonly ReadyTopic[],
  options: CreateTopicsReadyOptions = {},
): Promise<void> {
  const configs = topics.map((topic) => (typeof topic === 'string' ? { topic } : { topic: topic.topic, numPartitions: topic.numPartitions }));
  const timeoutMs = options.timeoutMs ?? CREATE_TOPICS_READY_DEFAULTS.timeoutMs;
  validate(configs, timeoutMs);
  const names = configs.map(({ topic }) => topic);
  await untilReady(names, timeoutMs, async () => {
    const problem = await readiness(admin, configs, new Set());
    return problem === undefined ? { done: undefined } : { problem };
  });
}

/**
 * Creates the topics that do not exist yet and returns once Kafka's metadata shows a leader for every partition
 * of every topic asked for, and every leader serves its partition, so a write right after succeeds. Use it
 * wherever topics are created and then written to (`topics ensure`, tests).
 *
 * kafkajs' `createTopics({ waitForLeaders: true })` is not enough on KRaft: right after the creation a broker
 * may answer the leader wait with `UNKNOWN_TOPIC_OR_PARTITION` ("This server does not host this
 * topic-partition"), which kafkajs 2.2.4 does not retry, and calling it again then returns `false` (the topics
 * exist) without waiting at all; and a leader named in the metadata may not serve its partition yet. So this
 * lists the topics, creates the missing ones, and then waits as `waitForTopicsReady` does, all within
 * `timeoutMs`. A topic that exists keeps its partitions and configuration.
 *
 * @throws TopicsNotReadyError if the topics are not ready within `timeoutMs` (naming what is missing).
 * @throws the kafkajs error of any other failure (e.g. an invalid config, a replication factor above the
 * broker count, not authorized).
 * @example
 * const admin = kafka.admin();
 * await admin.connect();
 * const { created } = await createTopicsReady(admin, [
 *   { topic: 'orders.retry.5s', numPartitions: 6, configEntries: [{ name: 'retention.ms', value: '86400000' }] },
 *   { topic: 'orders.dlq', numPartitions: 1 },
 * ], { timeoutMs: 20_000 });
 */
export async function createTopicsReady(
  admin: TopicsAdmin,
  topics: readonly ITopicConfig[],
  options: CreateTopicsReadyOptions = {},
): Promise<CreateTopicsReadyResult> {
  const timeoutMs = options.timeoutMs ?? CREATE_TOPICS_READY_DEFAULTS.timeoutMs;
  validate(topics, timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const names = topics.map(({ topic }) => topic);
  let existing: ReadonlySet<string> | undefined;
  return untilReady<CreateTopicsReadyResult>(names, timeoutMs, async () => {
    const listed = await listTopics(admin);
    existing ??= new Set(names.filter((name) => listed.has(name)));
    const missing = topics.filter(({ topic }) => !listed.has(topic));
    if (missing.length > 0) {
      const timeout = Math.max(1_000, deadline - Date.now());
      await admin.createTopics({ topics: [...missing], waitForLeaders: true, timeout });
    }
    const problem = await readiness(admin, topics, existing);
    if (problem !== undefined) return { problem };
    const before = existing;
    return { done: { created: names.filter((name) => !before.has(name)), existing: names.filter((name) => before.has(name)) } };
  });
}
