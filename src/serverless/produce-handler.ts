import { CompressionTypes, Kafka, logLevel, type Admin } from 'kafkajs';
import { kafkaClientConfig, type KafkaConnectionDeps } from '../connections/kafka';
import { sleep } from '../deadline';
import { ConfigError } from '../errors';
import { resolveOptions } from '../options';
import { PRODUCE_TOPIC_VARIABLE } from './topics-resource';

/**
 * The produce function (`kafkaLanes.produce: true`): a first record into a deployed service whose cluster has private
 * addresses only. It runs in the group's VPC with the group's Kafka auth, writes the records it is given to the source
 * topic (acks=all, idempotent), then waits until the trigger's consumer group (the group itself: Lambda's event source
 * mapping commits after each successful invocation) has committed past each of them: the records were processed.
 *
 *   npx serverless invoke --function ordersProduce --stage prod --data '{"records":[{"key":"c-1","value":{"orderId":"o-1"}}]}'
 */

/** What `serverless invoke --data` gives the function. */
export interface ProduceRequest {
  readonly records: ReadonlyArray<{ readonly key?: string | null; readonly value: unknown; readonly headers?: Readonly<Record<string, string>> }>;
  /** Seconds to wait for the trigger's commit (default 60; 0: do not wait). */
  readonly waitSeconds?: number;
}

/** Where each record landed, and whether the trigger committed past it. */
export interface ProduceAnswer {
  readonly topic: string;
  readonly produced: ReadonlyArray<{ readonly partition: number; readonly offset: string; readonly key: string | null }>;
  /** Per partition written: the trigger's committed offset when the wait ended. */
  readonly committed: Readonly<Record<string, string>>;
  /** Every record produced is below the trigger's committed offset of its partition. */
  readonly processed: boolean;
  readonly waitedMs: number;
}

/**
 * Checks a request; every problem names the record and what was expected.
 *
 * @throws ConfigError when there is no record, or a record has no value or a key that is not a string.
 * @example
 * produceRequest({ records: [{ key: 'c-1', value: { orderId: 'o-1' } }] }); // the same, checked
 */
export function produceRequest(input: unknown): ProduceRequest {
  const records = (input as { records?: unknown } | null)?.records;
  if (!Array.isArray(records) || records.length === 0) {
    throw new ConfigError(`Expected \`{"records": [{"key": "...", "value": ...}]}\` with at least one record, got ${JSON.stringify(input)?.slice(0, 200)}`);
  }
  records.forEach((record: unknown, index) => {
    const { key, value } = (record ?? {}) as { key?: unknown; value?: unknown };
    if (value === undefined) throw new ConfigError(`Expected records[${index}].value (JSON, or a string written as it is), got none`);
    if (key !== undefined && key !== null && typeof key !== 'string') throw new ConfigError(`Expected records[${index}].key to be a string, got ${JSON.stringify(key)}`);
  });
  const waitSeconds = (input as { waitSeconds?: unknown }).waitSeconds;
  if (waitSeconds !== undefined && (typeof waitSeconds !== 'number' || !(waitSeconds >= 0))) throw new ConfigError(`Expected \`waitSeconds\` to be a number of seconds, 0 or more, got ${JSON.stringify(waitSeconds)}`);
  return input as ProduceRequest;
}

/** The trigger's committed offset of each partition, as Kafka reports it (`-1`: none yet). */
async function committedOffsets(admin: Admin, group: string, topic: string): Promise<Map<number, bigint>> {
  const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return new Map((offsets?.partitions ?? []).map((partition) => [partition.partition, BigInt(partition.offset)]));
}

/**
 * Creates the produce function's handler. The group, the topic and the connection (brokers, TLS, SASL) come from the
 * environment the plugin sets.
 *
 * @example
 * export const handler = produceHandler();
 */
export function produceHandler(
  env: Readonly<Record<string, string | undefined>> = process.env,
  deps: KafkaConnectionDeps & { sleep?: (ms: number) => Promise<void> } = {},
): (input: unknown) => Promise<ProduceAnswer> {
  const pause = deps.sleep ?? sleep;
  return async (input) => {
    const request = produceRequest(input);
    const topic = env[PRODUCE_TOPIC_VARIABLE];
    if (topic === undefined || topic === '') throw new ConfigError(`Expected ${PRODUCE_TOPIC_VARIABLE} (the topic to write) in the environment, got none`);
    const options = resolveOptions({}, env);
    const kafka = new Kafka({ ...(await kafkaClientConfig(options.kafka, [], deps)), logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();
    const produced: Array<{ partition: number; offset: string; key: string | null }> = [];
    try {
      for (const record of request.records) {
        const key = record.key ?? null;
        const value = typeof record.value === 'string' ? record.value : JSON.stringify(record.value);
        const [meta] = await producer.send({ topic, acks: -1, compression: CompressionTypes.None, messages: [{ key, value, headers: { ...record.headers } }] });
        produced.push({ partition: meta?.partition ?? -1, offset: meta?.baseOffset ?? '-1', key });
      }
    } finally {
      await producer.disconnect();
    }
    const started = Date.now();
    const deadline = started + 1_000 * (request.waitSeconds ?? 60);
    const admin = kafka.admin();
    await admin.connect();
    try {
      for (;;) {
        const committed = await committedOffsets(admin, options.group, topic);
        const processed = produced.every((record) => (committed.get(record.partition) ?? -1n) > BigInt(record.offset));
        if (processed || Date.now() >= deadline) {
          const written = [...new Set(produced.map((record) => record.partition))];
          return {
            topic,
            produced,
            committed: Object.fromEntries(written.map((partition) => [String(partition), String(committed.get(partition) ?? -1n)])),
            processed,
            waitedMs: Date.now() - started,
          };
        }
        await pause(1_000);
      }
    } finally {
      await admin.disconnect();
    }
  };
}

// Built on the first request so that importing this module (tests, the plugin) reads no environment.
let deployed: ReturnType<typeof produceHandler> | undefined;

/** The Lambda handler the plugin deploys as `<function>Produce`. */
export const handler = async (input: unknown): Promise<ProduceAnswer> => {
  deployed ??= produceHandler();
  return deployed(input);
};
