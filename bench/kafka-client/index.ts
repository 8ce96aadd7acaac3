/**
 * The Kafka clients the benchmarks can run the framework's writers on, by name (`KAFKA_CLIENT`): kafkajs, the client
 * in use, and the candidates measured in docs/kafka-client.md. Each is a producer factory of the Kafka client seam
 * (src/connections/kafka-client.ts).
 */
import { Kafka, logLevel } from 'kafkajs';
import type { ProducerFactory } from '../../src/connections/kafka-client';
import { ConfluentProducers, loadConfluent } from './confluent';
import { PlatformaticProducers } from './platformatic';

export const KAFKA_CLIENTS = ['kafkajs', '@platformatic/kafka', '@confluentinc/kafka-javascript'] as const;
export type KafkaClientName = (typeof KAFKA_CLIENTS)[number];

/** The client named by `KAFKA_CLIENT` (default kafkajs), checked. */
export function kafkaClientName(value = process.env.KAFKA_CLIENT): KafkaClientName {
  if (value === undefined || value === '') return 'kafkajs';
  const found = KAFKA_CLIENTS.find((name) => name === value);
  if (found === undefined) throw new Error(`KAFKA_CLIENT: expected one of ${KAFKA_CLIENTS.map((n) => `\`${n}\``).join(', ')}, got \`${value}\``);
  if (found === '@confluentinc/kafka-javascript' && loadConfluent() === undefined) {
    throw new Error('KAFKA_CLIENT=@confluentinc/kafka-javascript: expected CONFLUENT_KAFKA_DIR, a folder where it is installed (see docs/kafka-client.md), got none');
  }
  return found;
}

/** A producer factory of the named client on these brokers. */
export function producerFactory(name: KafkaClientName, brokers: readonly string[], clientId = 'bench'): ProducerFactory {
  switch (name) {
    case 'kafkajs':
      return new Kafka({ clientId, brokers: [...brokers], logLevel: logLevel.NOTHING });
    case '@platformatic/kafka':
      return new PlatformaticProducers(brokers, clientId);
    case '@confluentinc/kafka-javascript':
      return new ConfluentProducers(loadConfluent()!, brokers, clientId);
  }
}
