import { Kafka, logLevel, type Producer } from 'kafkajs';
import { CompletionStore } from '../completion/store';
import { kafkaClientConfig } from '../connections';
import { HandOffWriter } from '../handoff';
import { deadLetterTopic, DEFAULTS, resolveOptions } from '../options';
import type { OperatorParts } from '../retry/operator';
import { connectionOptions, connectKafka, withRedis, type KafkaFlags, type RedisFlags } from './connections';

export interface OperatorFlags extends KafkaFlags, RedisFlags {
  readonly tiers?: string;
}

const LOCAL_BROKERS = ['127.0.0.1:9092'];

/** The `--tiers` option of the commands that write retry copies. */
export const TIERS_OPTION = ['--tiers <durations>', `the group's retry tiers, comma separated (default: ${DEFAULTS.retry.tiers.join(',')})`] as const;

/**
 * Runs `work` with what the operator commands need: the group's options, its completion store on Redis, a
 * hand-off writer and a plain producer, all closed afterwards.
 */
export async function withOperatorParts<T>(group: string, flags: OperatorFlags, work: (parts: OperatorParts & { producer: Producer; kafka: Kafka }) => Promise<T>): Promise<T> {
  const connections = connectionOptions(group, flags);
  const tiers = flags.tiers === undefined ? undefined : flags.tiers.split(',').map((t) => t.trim()).filter((t) => t !== '');
  const options = resolveOptions({ group, ...(tiers === undefined ? {} : { retry: { tiers } }), kafka: { brokers: [...connections.kafka.brokers] } });
  const kafka = new Kafka({
    ...(await kafkaClientConfig({ ...connections.kafka, clientId: 'kafka-lanes-cli' }, LOCAL_BROKERS)),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5_000,
  });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(group) });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await connectKafka(connections.kafka, () => producer.connect());
  try {
    return await withRedis(group, flags, (redis) => work({ options: { ...options, redis: connections.redis }, store: new CompletionStore(redis), sink: writer, producer, kafka }));
  } finally {
    await Promise.all([writer.disconnect(), producer.disconnect()]);
  }
}
