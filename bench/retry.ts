/**
 * bench:retry — the retry path end to end on one partition: 20,000 records over 1,000 keys, a 10 ms handler,
 * 1% of the keys failing twice on their first record then succeeding (their later records park behind it and
 * drain in order). Processor batches and retry batches run side by side (as their event sources would invoke
 * them), on the local broker and Redis, until every record is done.
 *
 * Prints: records/s end to end; retry lateness after the due time (p50/p99); the other keys' completion p99
 * beside a run without failures (ratio, same machine, same run of the script); Redis round trips per record.
 * No assertion: figures only. Needs `npm run local:up`.
 *
 *   npm run bench:retry
 *   RECORDS=5000 KEYS=500 npm run bench:retry
 */
import { CompletionStore } from '../src/completion/store';
import Redis from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { readHandOffHeaders, HandOffWriter } from '../src/handoff';
import { deadLetterTopic, resolveOptions, retryTopics } from '../src/options';
import { LanesFunction, type LanesRecord } from '../src/handler/lanes-function';
import { createTelemetry } from '../src/telemetry';
import { contextWithin, eventOf, fetchRecords, produce } from '../test/integration/support/kafka-events';
import { RetryFeed } from '../test/integration/support/retry-feed';
import { createTopic, uniqueName, KAFKA_BROKERS } from '../test/integration/support/stack';
import { countCommands, percentile } from './support';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const RECORDS = Number(process.env.RECORDS ?? 20_000);
const KEYS = Number(process.env.KEYS ?? 1_000);
const FAILING_SHARE = Number(process.env.FAILING_SHARE ?? 0.01);
const BATCH = Number(process.env.BATCH ?? 1_000);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 10);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 200);
const BACKOFF_MS = Number(process.env.BACKOFF_MS ?? 500);
const TIERS = ['1s', '1m'];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function run(records: Awaited<ReturnType<typeof fetchRecords>>, failingKeys: ReadonlySet<string>) {
  const group = uniqueName('bench-retry');
  await Promise.all([...retryTopics(group, TIERS).map((t) => t.topic), deadLetterTopic(group)].map((topic) => createTopic(topic, 1)));
  const redis = new Redis('redis://127.0.0.1:6379');
  const commands = countCommands(redis);
  const writer = new HandOffWriter(new Kafka({ clientId: 'bench-retry', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }), { deadLetterTopic: deadLetterTopic(group) });
  const options = resolveOptions({ group, concurrency: CONCURRENCY, retry: { tiers: TIERS, maxAttempts: 5, backoff: { type: 'fixed', delayMs: BACKOFF_MS } } }, {});
  const feed = await RetryFeed.start(TIERS.map((tier) => `${group}.retry.${tier}`));
  const done = new Set<number>();
  const otherKeysDone: number[] = [];
  const lateness: number[] = [];
  const failuresLeft = new Map<string, number>([...failingKeys].map((key) => [key, 2]));
  const firstOfKey = new Map<string, number>();
  for (const record of records) {
    const key = record.key?.toString() ?? '';
    if (!firstOfKey.has(key)) firstOfKey.set(key, record.offset);
  }
  let started = 0;
  const handler = async (record: LanesRecord): Promise<void> => {
    const due = readHandOffHeaders(record.headers).dueAtMs;
    if (due !== undefined) lateness.push(Date.now() - due);
    await sleep(LATENCY_MS);
    const key = String(record.key);
    const left = failuresLeft.get(key) ?? 0;
    if (left > 0 && firstOfKey.get(key) === record.origin.offset) {
      failuresLeft.set(key, left - 1);
      throw new Error('fails twice, then succeeds');
    }
    done.add(record.origin.offset);
    if (!failingKeys.has(key)) otherKeysDone.push(performance.now() - started);
  };
  const processor = new LanesFunction({ options, handler, store: new CompletionStore(redis, options.caps), handOff: () => writer, telemetry: createTelemetry(group) });
  const events = [];
  for (let i = 0; i < records.length; i += BATCH) events.push(eventOf(records.slice(i, i + BATCH)));

  started = performance.now();
  const sources = (async () => {
    for (const event of events) await processor.process(event, contextWithin(600_000));
  })();
  await Promise.all([sources, feed.feedUntil((event, context) => processor.process(event, context), () => done.size >= records.length, 600_000)]);
  const seconds = (performance.now() - started) / 1000;
  await feed.stop();
  await writer.disconnect();
  redis.disconnect();
  const others = otherKeysDone.sort((a, b) => a - b);
  const late = lateness.sort((a, b) => a - b);
  return { seconds, commands: commands.count, othersP99: percentile(others, 99), lateness: late };
}

async function main(): Promise<void> {
  const topic = uniqueName('bench-retry-src');
  await createTopic(topic, 1);
  await produce(topic, Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i % KEYS}`, value: JSON.stringify({ i }) })));
  const records = await fetchRecords(topic, RECORDS);
  const failing = new Set(Array.from({ length: Math.max(1, Math.round(KEYS * FAILING_SHARE)) }, (_, i) => `k${Math.floor((i * KEYS) / Math.max(1, Math.round(KEYS * FAILING_SHARE)))}`));

  const clean = await run(records, new Set());
  const failing2 = await run(records, failing);
  console.log(`\nOne partition, ${RECORDS} records over ${KEYS} keys, ${LATENCY_MS} ms handler, concurrency ${CONCURRENCY}, ` +
    `${failing.size} key(s) failing twice on their first record (backoff ${BACKOFF_MS} ms, tiers ${TIERS.join(', ')})`);
  console.table([
    { run: 'no failures', seconds: clean.seconds.toFixed(2), 'records/s': Math.round(RECORDS / clean.seconds), 'other keys done p99 ms': Math.round(clean.othersP99), 'Redis round trips/record': (clean.commands / RECORDS).toFixed(4) },
    { run: `${failing.size} keys failing twice`, seconds: failing2.seconds.toFixed(2), 'records/s': Math.round(RECORDS / failing2.seconds), 'other keys done p99 ms': Math.round(failing2.othersP99), 'Redis round trips/record': (failing2.commands / RECORDS).toFixed(4) },
  ]);
  console.log(`retry lateness after the due time: p50 ${percentile(failing2.lateness, 50)} ms, p99 ${percentile(failing2.lateness, 99)} ms (${failing2.lateness.length} retry runs)`);
  console.log(`other keys' completion p99, failing run / clean run: ${(failing2.othersP99 / clean.othersP99).toFixed(2)}`);
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
