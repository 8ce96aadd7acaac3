/**
 * One Kafka client's idempotent producer alone (acks=all, one request in flight, as the framework's writers make
 * it), no framework code: MESSAGES messages with a key, a 90-byte JSON value and HEADERS headers (3), sent one send after
 * another in sends of each size of SENDS. Prints one JSON line per size: CPU µs per message (`process.cpuUsage()`:
 * every thread of the process, so a native client's own threads too) and messages/s. Run by bench/kafka-clients.ts,
 * one process per client and round; alone:
 *
 *   KAFKA_CLIENT=@platformatic/kafka SENDS=32,128,512 npx tsx bench/kafka-client/producer-alone.ts
 */
import { createTopic, uniqueName, KAFKA_BROKERS } from '../../test/integration/support/stack';
import { startClock } from '../support';
import { kafkaClientName, producerFactory } from '.';

const MESSAGES = Number(process.env.MESSAGES ?? 20_000);
const SENDS = (process.env.SENDS ?? '32,128,512').split(',').map(Number);
/** Headers per message: 3, or 11 for a hand-off copy's (its origin, lane, attempt, due time, error, ...). */
const HEADERS = Number(process.env.HEADERS ?? 3);

async function main(): Promise<void> {
  const client = kafkaClientName();
  const topic = uniqueName('producer-alone');
  await createTopic(topic, 1);
  const messages = Array.from({ length: MESSAGES }, (_, i) => ({
    key: Buffer.from(`k${i % 1000}`),
    value: Buffer.from(JSON.stringify({ n: i, id: `order-${i.toString().padStart(8, '0')}`, status: 'created', total: 1234.5, currency: 'EUR' }).padEnd(90, ' ')),
    headers: Object.fromEntries(
      [['lanes-output', `bench/${topic}/0/${i}/0`], ['trace-id', `t-${i}`], ['source', 'bench'], ...Array.from({ length: Math.max(0, HEADERS - 3) }, (_, h) => [`lanes-h${h}`, String(1_700_000_000_000 + i + h)])].slice(0, HEADERS),
    ),
  }));
  const producer = producerFactory(client, KAFKA_BROKERS, 'bench-producer').producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  // Warm: the connection, the producer id, the code compiled.
  await producer.sendBatch({ topicMessages: [{ topic, messages: messages.slice(0, 500) }], acks: -1 });
  for (const perSend of SENDS) {
    const clock = startClock();
    for (let from = 0; from < messages.length; from += perSend) {
      await producer.sendBatch({ topicMessages: [{ topic, messages: messages.slice(from, from + perSend) }], acks: -1 });
    }
    const { seconds, cpuMicros } = clock.stop();
    console.log(JSON.stringify({ client, headers: HEADERS, perSend, cpuPerMessage: cpuMicros / messages.length, messagesPerSecond: messages.length / seconds }));
  }
  await producer.disconnect();
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
