/**
 * The cost of `redis.waitForReplicas` (docs/durability.md): one `WAIT` per invocation after its last write.
 * Starts a Redis primary and its replica of its own (ports in 6400-6499, stopped at the end), runs the same
 * batches through the processor with and without the wait, and prints both (median of ROUNDS rounds).
 *
 *   npm run bench:wait                       20,000 records in batches of 1,000, 1,000 keys, concurrency 200, 10 ms handler
 *   RECORDS=50000 BATCH=10000 npm run bench:wait
 */
import { CompletionStore } from '../src/completion/store';
import Redis from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { createTelemetry } from '../src/telemetry';
import { HandOffWriter } from '../src/handoff';
import { LanesFunction } from '../src/handler/lanes-function';
import { DEFAULTS, deadLetterTopic, resolveOptions, retryTopics } from '../src/options';
import { eventOf, fetchRecords, produce } from '../test/integration/support/kafka-events';
import { RedisPair } from '../test/integration/support/redis-pair';
import { createTopic, KAFKA_BROKERS, uniqueName } from '../test/integration/support/stack';
import { median } from './support';

const RECORDS = Number(process.env.RECORDS ?? 20_000);
const BATCH = Number(process.env.BATCH ?? 1_000);
const KEYS = Number(process.env.KEYS ?? 1_000);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 4);

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

async function run(port: number, events: readonly unknown[], waitForReplicas: number): Promise<number> {
  const group = uniqueName('benchwait');
  await Promise.all([...retryTopics(group, DEFAULTS.retry.tiers).map((t) => t.topic), deadLetterTopic(group)].map((topic) => createTopic(topic, 1)));
  const redis = new Redis({ port });
  const writer = new HandOffWriter(new Kafka({ clientId: 'bench-wait', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: deadLetterTopic(group) });
  const options = resolveOptions({ group, concurrency: 200, redis: { waitForReplicas, waitTimeoutMs: 1_000 } }, {});
  const processor = new LanesFunction({
    options, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group),
    handler: () => new Promise<void>((resolve) => setTimeout(resolve, LATENCY_MS)),
  });
  const context = { getRemainingTimeInMillis: () => 600_000 };
  const started = performance.now();
  for (const event of events) {
    const response = await processor.process(event, context);
    if (response.batchItemFailures.length > 0) throw new Error('unexpected failures');
  }
  const seconds = (performance.now() - started) / 1000;
  await writer.disconnect();
  redis.disconnect();
  return seconds;
}

async function main(): Promise<void> {
  const topic = uniqueName('benchwait-src');
  await createTopic(topic, 1);
  await produce(topic, Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % KEYS}`, value: '{}' })));
  const records = await fetchRecords(topic, RECORDS);
  const pair = await RedisPair.start();
  try {
    const figures: Record<string, number[]> = { without: [], with: [] };
    // Each run reads the records under a topic name of its own, so no run finds another's done bits.
    const eventsAs = (name: string): unknown[] => {
      const events = [];
      for (let i = 0; i < records.length; i += BATCH) events.push(eventOf(records.slice(i, i + BATCH).map((r) => ({ ...r, topic: name }))));
      return events;
    };
    // A warm-up run first (scripts loaded, code compiled); then the two settings in turns, the first alternating.
    await run(pair.primary.port, eventsAs(`${topic}-warm`), 1);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const wait of round % 2 === 0 ? [0, 1] : [1, 0]) {
        figures[wait === 0 ? 'without' : 'with']!.push(await run(pair.primary.port, eventsAs(`${topic}-${wait}-${round}`), wait));
      }
    }
    const invocations = Math.ceil(RECORDS / BATCH);
    const without = median(figures.without!);
    const withWait = median(figures.with!);
    process.stdout.write(`${RECORDS} records in ${invocations} invocations of ${BATCH}, ${KEYS} keys, concurrency 200, ${LATENCY_MS} ms handler; a primary and one replica on 127.0.0.1 (median of ${ROUNDS} rounds)\n`);
    process.stdout.write(`  without WAIT            ${without.toFixed(3)} s   ${Math.round(RECORDS / without)} records/s\n`);
    process.stdout.write(`  waitForReplicas: 1      ${withWait.toFixed(3)} s   ${Math.round(RECORDS / withWait)} records/s\n`);
    process.stdout.write(`  WAIT cost per invocation ${(((withWait - without) * 1000) / invocations).toFixed(2)} ms (${(((withWait - without) / without) * 100).toFixed(1)} % of the run)\n`);
  } finally {
    pair.stop();
  }
}

void main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
