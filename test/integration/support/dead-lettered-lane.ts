/**
 * A group whose lane has a dead-lettered head (offset 0, failing with a `NonRetriableError` until `fix()`) and,
 * under `hold`, a parked successor (offset 1): the starting point of the operator commands' tests (`lane
 * release`, `dlq replay`). Its own topics, retry tiers, dead-letter topic, Redis connection and retry feed;
 * `stop()` closes every rig the factory started.
 */
import { CompletionStore } from '../../../src/completion/store';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { partitionKeys } from '../../../src/completion';
import { NonRetriableError } from '../../../src/errors';
import { HandOffWriter } from '../../../src/handoff';
import { LanesFunction } from '../../../src/handler/lanes-function';
import { createTelemetry } from '../../../src/telemetry';
import { resolveOptions, type LanesOptions, type LanesOptionsInput } from '../../../src/options';
import { contextWithin, eventOf, fetchRecords, produce, type TestMessage } from './kafka-events';
import { RetryFeed } from './retry-feed';
import { createTopic, KAFKA_BROKERS, REDIS_URL, uniqueName } from './stack';

/** The retry tiers of every such group: a short one the feed drains, a long one nothing reaches. */
export const OPERATOR_TIERS = ['1s', '1m'];

export interface DeadLetteredLaneInput {
  /** Prefix of the group and topic names (unique per test file). */
  readonly prefix: string;
  readonly policy: 'release' | 'hold';
  /** Two records of one lane; the first is the head that fails until fixed. */
  readonly messages: readonly [TestMessage, TestMessage];
  readonly options?: Partial<LanesOptionsInput>;
}

export interface DeadLetteredLane {
  readonly group: string;
  readonly topic: string;
  readonly options: LanesOptions;
  readonly processor: LanesFunction;
  readonly redis: Redis;
  readonly writer: HandOffWriter;
  readonly feed: RetryFeed;
  /** Every handler run, in order. */
  readonly runs: Array<{ offset: number; attempt: number }>;
  /** The partition's `:lanes` hash. */
  readonly lanesKey: string;
  /** The blocked lane's id right after the first invocation (undefined once it was released). */
  readonly lane: string | undefined;
  /** The head stops failing. */
  fix(): void;
  lanesFree(): Promise<boolean>;
  /** Feeds retry copies to the function until offset 1 ran and the lane is free. */
  drain(): Promise<void>;
}

/** Starts dead-lettered lanes and stops them all at once (call `stop` in `afterAll`). */
export function deadLetteredLanes(): { start(input: DeadLetteredLaneInput): Promise<DeadLetteredLane>; stop(): Promise<void> } {
  const cleanups: Array<() => Promise<void>> = [];
  return {
    async start({ prefix, policy, messages, options: extra = {} }) {
      const group = uniqueName(`${prefix}grp`);
      const topic = uniqueName(`${prefix}src`);
      await createTopic(topic, 1);
      await Promise.all([...OPERATOR_TIERS.map((t) => `${group}.retry.${t}`), `${group}.dlq`].map((t) => createTopic(t, 1)));
      const options = resolveOptions(
        { group, flushIntervalMs: 20, deadLetter: { policy }, retry: { tiers: OPERATOR_TIERS }, ...extra } as LanesOptionsInput,
        {},
      );
      const redis = new Redis(REDIS_URL);
      const writer = new HandOffWriter(new Kafka({ clientId: `${prefix}-test`, brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: `${group}.dlq` });
      let broken = true;
      const runs: Array<{ offset: number; attempt: number }> = [];
      const processor = new LanesFunction({
        options,
        store: new CompletionStore(redis, options.caps),
        handOff: () => writer,
        telemetry: createTelemetry(group),
        handler: (record, ctx) => {
          runs.push({ offset: record.origin.offset, attempt: ctx.attempt });
          if (broken && record.origin.offset === 0) throw new NonRetriableError('broken until fixed');
        },
      });
      // The held head's watch copy (due half a minute on) is in the first retry event: a short invocation writes it
      // back after a second instead of waiting for it most of a minute.
      const feed = await RetryFeed.start(OPERATOR_TIERS.map((t) => `${group}.retry.${t}`), { invocationMs: options.deadlineMarginMs + 1_000 });
      cleanups.push(async () => {
        await feed.stop();
        await writer.disconnect();
        redis.disconnect();
      });
      await produce(topic, messages);
      await processor.process(eventOf(await fetchRecords(topic, 2)), contextWithin(60_000));
      const lanesKey = partitionKeys({ group, topic, partition: 0 }).lanes;
      const [lane] = await redis.hkeys(lanesKey);
      const lanesFree = async (): Promise<boolean> => (await redis.hlen(lanesKey)) === 0;
      return {
        group,
        topic,
        options,
        processor,
        redis,
        writer,
        feed,
        runs,
        lanesKey,
        lane,
        fix: () => {
          broken = false;
        },
        lanesFree,
        drain: () => feed.feedUntil((event, context) => processor.process(event, context), async () => runs.some((r) => r.offset === 1) && (await lanesFree())),
      };
    },
    async stop() {
      for (const cleanup of cleanups.splice(0)) await cleanup().catch(() => undefined);
    },
  };
}
