import type { Kafka, Producer } from 'kafkajs';
import { HandOffWriter } from '../handoff';
import { deadLetterTopic, DEFAULTS, ENV, resolveOptions, retryTopic } from '../options';
import { durationMs } from '../options/duration';
import type { OperatorParts } from '../operations/lanes';
import { cliKafka, connectionOptions, connectKafka, withStore, type KafkaFlags, type RedisFlags } from './connections';

export interface OperatorFlags extends KafkaFlags, RedisFlags {
  readonly tiers?: string;
}

/** The `--tiers` option of the commands that write retry copies. */
export const TIERS_OPTION = [
  '--tiers <durations>',
  `the group's retry tiers, comma separated (default: $${ENV.retryTiers}, else the group's retry topics in Kafka, else ${DEFAULTS.retry.tiers.join(',')})`,
] as const;

/**
 * The retry tiers a group's topics name (`<group>.retry.<tier>`), shortest delay first; `undefined` when it has none.
 *
 * @example
 * tiersOfTopics('orders-svc', ['orders', 'orders-svc.retry.1m', 'orders-svc.retry.5s', 'orders-svc.dlq']); // ['5s', '1m']
 */
export function tiersOfTopics(group: string, topics: readonly string[]): string[] | undefined {
  const prefix = retryTopic(group, '');
  const tiers = [...new Set(topics.filter((topic) => topic.startsWith(prefix)).map((topic) => topic.slice(prefix.length)))]
    .map((tier) => ({ tier, ms: durationMs(tier) }))
    .filter((entry): entry is { tier: string; ms: number } => entry.ms !== undefined)
    .sort((a, b) => a.ms - b.ms)
    .map((entry) => entry.tier);
  return tiers.length === 0 ? undefined : tiers;
}

/**
 * Runs `work` with what the operator commands need: the group's options, its completion store on Redis, a
 * hand-off writer and a plain producer, all closed afterwards.
 */
export async function withOperatorParts<T>(group: string, flags: OperatorFlags, work: (parts: OperatorParts & { producer: Producer; kafka: Kafka }) => Promise<T>): Promise<T> {
  const connections = connectionOptions(group, flags);
  const kafka = await cliKafka(connections.kafka, 'kafka-lanes-cli');
  // A copy written to a tier the group does not have would wait in a topic nothing reads: the flag, else the
  // variable the plugin sets, else the group's own retry topics.
  let tiers = flags.tiers === undefined ? undefined : flags.tiers.split(',').map((t) => t.trim()).filter((t) => t !== '');
  if (tiers === undefined && (process.env[ENV.retryTiers] ?? '') === '') {
    const admin = kafka.admin();
    await connectKafka(connections.kafka, () => admin.connect());
    tiers = tiersOfTopics(group, await admin.listTopics().finally(() => admin.disconnect()));
  }
  const options = resolveOptions({ group, ...(tiers === undefined ? {} : { retry: { tiers } }), kafka: { brokers: [...connections.kafka.brokers] } });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(group) });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await connectKafka(connections.kafka, () => producer.connect());
  try {
    return await withStore(group, flags, (store) => work({ options: { ...options, redis: connections.redis }, store, sink: writer, producer, kafka }));
  } finally {
    await Promise.all([writer.disconnect(), producer.disconnect()]);
  }
}
