/**
 * bench:processor — records per second of the processor on one partition, beside a plain kafkajs
 * `eachMessage` consumer (the sequential baseline) and the bound concurrency / latency.
 *
 * 20,000 records are produced to a fresh one-partition topic, fetched back and shaped into Kafka trigger
 * events of BATCH records (the event source's batch size), then processed by the processor with a handler
 * that awaits LATENCY_MS (and once with a handler that does nothing: the framework's own cost per record).
 * Redis round trips are the commands the processor's own connection sends. A second run makes one key fail
 * on every record (G6): the other keys' completion times (from the start of their invocation) should match
 * the run without failures. Needs `npm run local:up`.
 *
 *   npm run bench:processor
 *   RECORDS=5000 BASELINE_RECORDS=300 npm run bench:processor
 */
import Redis from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { HandOffWriter } from '../src/handoff';
import { DEFAULTS, deadLetterTopic, resolveOptions, retryTopics } from '../src/options';
import { Processor, type LanesRecord } from '../src/processor/processor';
import { createTelemetry } from '../src/processor/telemetry';
import { eventOf, fetchRecords, produce } from '../test/integration/support/kafka-events';
import { createKafka, createTopic, uniqueName, KAFKA_BROKERS } from '../test/integration/support/stack';
import { countCommands, percentile } from './support';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const RECORDS = Number(process.env.RECORDS ?? 20_000);
const BASELINE_RECORDS = Number(process.env.BASELINE_RECORDS ?? 1_000);
const BATCH = Number(process.env.BATCH ?? 10_000);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 10);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 200);
const KEYS = Number(process.env.KEYS ?? 1_000);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface ProcessorRun {
  readonly latencyMs: number;
  /** Every record of this key fails (it goes to the retry topic, its later records are parked). */
  readonly failingKey?: string;
  readonly label: string;
}

async function runProcessor(records: Awaited<ReturnType<typeof fetchRecords>>, run: ProcessorRun) {
  const group = uniqueName('bench');
  await Promise.all([...retryTopics(group, DEFAULTS.retry.tiers).map((t) => t.topic), deadLetterTopic(group)].map((topic) => createTopic(topic, 1)));
  const redis = new Redis('redis://127.0.0.1:6379');
  const commands = countCommands(redis);
  const kafka = new Kafka({ clientId: 'bench', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const writer = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(group) });
  const options = resolveOptions({ group, concurrency: CONCURRENCY }, {});
  // Completion time of every record of the other keys, from the start of its invocation.
  const completions: number[] = [];
  let invocationStart = 0;
  const handler = async (record: LanesRecord): Promise<void> => {
    if (run.latencyMs > 0) await sleep(run.latencyMs);
    if (record.key === run.failingKey) throw new Error('this key always fails');
    completions.push(performance.now() - invocationStart);
  };
  const processor = new Processor({ options, handler, redis, handOff: () => writer, telemetry: createTelemetry(group) });
  // Events are built before the clock starts: the event source, not the function, pays for them.
  const events = [];
  for (let i = 0; i < records.length; i += BATCH) events.push(eventOf(records.slice(i, i + BATCH)));
  const started = performance.now();
  for (const event of events) {
    invocationStart = performance.now();
    const response = await processor.process(event, { getRemainingTimeInMillis: () => 600_000 });
    if (response.batchItemFailures.length > 0) throw new Error('unexpected failures');
  }
  const seconds = (performance.now() - started) / 1000;
  const calls = commands.count;
  await writer.disconnect();
  redis.disconnect();
  const sorted = completions.sort((a, b) => a - b);
  return {
    run: run.label,
    records: records.length,
    seconds: seconds.toFixed(2),
    'records/s': Math.round(records.length / seconds),
    'Redis round trips/record': (calls / records.length).toFixed(4),
    'other keys done p50 ms': Math.round(percentile(sorted, 50)),
    'other keys done p99 ms': Math.round(percentile(sorted, 99)),
  };
}

async function runBaseline(topic: string, count: number, latencyMs: number) {
  const consumer = createKafka().consumer({ groupId: uniqueName('baseline'), maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  let started = 0;
  const seconds = await new Promise<number>((resolve) => {
    void consumer.run({
      eachMessage: async () => {
        if (seen === 0) started = performance.now();
        await sleep(latencyMs);
        seen += 1;
        if (seen === count) resolve((performance.now() - started) / 1000);
      },
    });
  });
  await consumer.disconnect();
  return {
    run: `kafkajs eachMessage (sequential), ${latencyMs} ms handler`,
    records: count,
    seconds: seconds.toFixed(2),
    'records/s': Math.round(count / seconds),
    'Redis round trips/record': '-',
    'other keys done p50 ms': '-',
    'other keys done p99 ms': '-',
  };
}

async function main(): Promise<void> {
  const topic = uniqueName('bench-src');
  await createTopic(topic, 1);
  await produce(topic, Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % KEYS}`, value: JSON.stringify({ i }) })));
  const records = await fetchRecords(topic, RECORDS);
  const rows = [
    await runBaseline(topic, Math.min(BASELINE_RECORDS, RECORDS), LATENCY_MS),
    await runProcessor(records, { latencyMs: LATENCY_MS, label: `kafka-lanes, concurrency ${CONCURRENCY}, ${LATENCY_MS} ms handler` }),
    await runProcessor(records, { latencyMs: LATENCY_MS, failingKey: 'k0', label: `same, key k0 failing every record (G6)` }),
    {
      run: `bound: concurrency / latency`,
      records: RECORDS,
      seconds: '-',
      'records/s': Math.round(CONCURRENCY / (LATENCY_MS / 1000)),
      'Redis round trips/record': '-',
      'other keys done p50 ms': '-',
      'other keys done p99 ms': '-',
    },
    await runProcessor(records, { latencyMs: 0, label: `kafka-lanes, concurrency ${CONCURRENCY}, handler does nothing` }),
  ];
  console.log(`\nOne partition, ${RECORDS} records over ${KEYS} keys (key order), events of ${BATCH} records`);
  console.table(rows);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
