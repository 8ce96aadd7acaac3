/**
 * bench:offline — the offline Kafka trigger (src/serverless/offline) with one slow partition: a topic of two
 * partitions gets RATE records/s on each for SECONDS; every invocation holding a record of partition 0 takes
 * SLOW_MS, one holding only partition 1's records takes FAST_MS. The trigger runs in this process on the
 * local broker (serverless-offline's worker threads left out), batchSize BATCH, window WINDOW_MS.
 *
 * Prints, per `mixPartitions` setting: partition 1's delivery latency (record timestamp to the start of its
 * invocation; p50, p99, max), its records/s while the producer runs, and how many records each partition got
 * by the end of the produce phase. No assertion: figures only. Needs `npm run local:up`.
 *
 *   npm run bench:offline
 *   RATE=100 SECONDS=20 SLOW_MS=2000 npm run bench:offline
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { MappingSpec } from '../src/serverless/offline/mapping';
import { OfflineKafkaTrigger } from '../src/serverless/offline/trigger';
import type { AwsKafkaEvent } from '../src/event/types';
import { inProcessLambda } from '../test/integration/support/in-process-lambda';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from '../test/integration/support/stack';
import { percentile } from './support';

const RATE = Number(process.env.RATE ?? 50);
const SECONDS = Number(process.env.SECONDS ?? 10);
const SLOW_MS = Number(process.env.SLOW_MS ?? 1_000);
const FAST_MS = Number(process.env.FAST_MS ?? 10);
const BATCH = Number(process.env.BATCH ?? 10);
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 100);
const MODES = (process.env.MIX ?? 'true,false').split(',').map((mode) => mode === 'true');

async function run(mixPartitions: boolean): Promise<void> {
  const topic = uniqueName('bench-offline');
  await createTopic(topic, 2);
  const latencies: number[] = [];
  const delivered = [0, 0];
  let producing = true;
  const deliveredWhileProducing = [0, 0];
  const handler = async (event: unknown): Promise<void> => {
    const records = Object.values((event as AwsKafkaEvent).records).flat();
    const now = Date.now();
    for (const record of records) {
      delivered[record.partition] = (delivered[record.partition] ?? 0) + 1;
      if (producing) deliveredWhileProducing[record.partition] = (deliveredWhileProducing[record.partition] ?? 0) + 1;
      if (record.partition === 1) latencies.push(now - record.timestamp);
    }
    await sleep(records.some((record) => record.partition === 0) ? SLOW_MS : FAST_MS);
  };
  const spec = {
    functionKey: 'bench',
    topic,
    groupId: `${topic}-esm`,
    batchSize: BATCH,
    batchingWindowMs: WINDOW_MS,
    startingPosition: 'TRIM_HORIZON',
    startingPositionTimestamp: undefined,
    reportBatchItemFailures: false,
    brokers: KAFKA_BROKERS,
    eventSource: { source: 'SelfManagedKafka' },
    mixPartitions,
    sessionTimeoutMs: 30_000,
  } as MappingSpec;
  const log = { notice: () => undefined, warning: (message: string) => console.warn(message) };
  const trigger = new OfflineKafkaTrigger(inProcessLambda({ bench: handler }), { specs: [spec], committers: [], custom: {}, log });
  await trigger.start();
  const producer = createKafka().producer();
  await producer.connect();
  const started = Date.now();
  for (let second = 0; second < SECONDS; second += 1) {
    for (let tick = 0; tick < 10; tick += 1) {
      const messages = Array.from({ length: Math.max(1, Math.round(RATE / 10)) }, (_, i) => [0, 1].map((partition) => ({ partition, value: `${second}.${tick}.${i}` }))).flat();
      await producer.send({ topic, messages });
      await sleep(Math.max(0, started + (second * 10 + tick + 1) * 100 - Date.now()));
    }
  }
  producing = false;
  const produceSeconds = (Date.now() - started) / 1000;
  const produced = SECONDS * 10 * Math.max(1, Math.round(RATE / 10));
  while (delivered[1]! < produced) await sleep(100);
  await producer.disconnect();
  await trigger.stop();
  await deleteTopics([topic]);
  const sorted = [...latencies].sort((a, b) => a - b);
  console.log(
    `mixPartitions=${String(mixPartitions).padEnd(5)} partition 1 latency p50 ${percentile(sorted, 50)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted[sorted.length - 1]} ms; ` +
      `partition 1 ${(deliveredWhileProducing[1]! / produceSeconds).toFixed(1)} records/s while producing ${RATE}/s; ` +
      `delivered while producing: p0 ${deliveredWhileProducing[0]}/${produced}, p1 ${deliveredWhileProducing[1]}/${produced}; invocations ${trigger.stats.invocations}`,
  );
}

async function main(): Promise<void> {
  console.log(`brokers ${KAFKA_BROKERS.join(',')}: ${RATE} records/s per partition for ${SECONDS} s, batchSize ${BATCH}, window ${WINDOW_MS} ms, slow ${SLOW_MS} ms, fast ${FAST_MS} ms`);
  for (const mix of MODES) await run(mix);
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
