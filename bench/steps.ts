/**
 * bench:steps — what durable steps and outputs cost: records/s, process CPU µs per record and Redis calls per record
 * for a handler with 0, 1 and 3 steps per record and one with one output per record (`ctx.send`), on one partition
 * (KEYS keys, key ordering, CONCURRENCY at once), no handler latency, so the figures are the framework's own cost.
 * ROUNDS rounds run every contender once each, interleaved; a column shows the median over its rounds. Every run
 * starts warm (one untimed invocation under another topic name). Needs the local Kafka and Redis.
 *
 *   npm run bench:steps
 *   RECORDS=5000 ROUNDS=1 npm run bench:steps     # a quick run
 *
 * Redis calls are commands sent (script calls, the step read, deletes): each is one round trip for its record, and
 * calls of records running at once share the connection (ioredis writes them without waiting for replies).
 */
import Redis from 'ioredis';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import type { OutputMessage } from '../src/lanes/effects';
import { HandOffWriter } from '../src/handoff';
import { OutputWriter } from '../src/effects/output-writer';
import { DEFAULTS, deadLetterTopic, resolveOptions, retryTopics } from '../src/options';
import { LanesFunction, type LanesContext, type LanesRecord } from '../src/handler/lanes-function';
import { createTelemetry } from '../src/telemetry';
import { eventOf, fetchRecords, produce } from '../test/integration/support/kafka-events';
import { createTopic, uniqueName, KAFKA_BROKERS } from '../test/integration/support/stack';
import { countCommands, median, startClock } from './support';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const RECORDS = Number(process.env.RECORDS ?? 20_000);
const BATCH = Number(process.env.BATCH ?? 10_000);
const KEYS = Number(process.env.KEYS ?? 1_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);

type Handler = (record: LanesRecord, ctx: LanesContext) => Promise<void>;

const CONTENDERS: ReadonlyArray<{ label: string; transactional?: boolean; handler: (out: string) => Handler }> = [
  { label: 'no steps, no outputs', handler: () => async () => undefined },
  { label: '1 step', handler: () => async (_r, ctx) => { await ctx.step('a', () => 1); } },
  {
    label: '3 steps',
    handler: () => async (_r, ctx) => {
      await ctx.step('a', () => 1);
      await ctx.step('b', () => 'two');
      await ctx.step('c', () => ({ three: 3 }));
    },
  },
  { label: '1 output', handler: (out) => async (r, ctx) => { ctx.send(out, { key: r.rawKey, value: r.rawValue }); } },
  {
    label: '1 output, transactions',
    transactional: true,
    handler: (out) => async (r, ctx) => { ctx.send(out, { key: r.rawKey, value: r.rawValue }); },
  },
];

/**
 * The alternative weighed against the idempotent producer: the same coalesced sends, each in a Kafka transaction
 * (begin, send, commit), as `read_committed` consumers would need. Only for the figures.
 */
class TransactionalOutputs {
  readonly #producer: Producer;
  readonly #connected: Promise<void>;
  #queue: Array<{ outputs: readonly OutputMessage[]; resolve: () => void; reject: (e: unknown) => void }> = [];
  #chain: Promise<void> = Promise.resolve();
  #scheduled = false;

  constructor(kafka: Kafka) {
    this.#producer = kafka.producer({ transactionalId: uniqueName('bench-tx'), idempotent: true, maxInFlightRequests: 1 });
    this.#connected = this.#producer.connect();
  }

  send(outputs: readonly OutputMessage[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ outputs, resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      this.#chain = this.#chain.then(async () => {
        this.#scheduled = false;
        const batch = this.#queue.splice(0);
        try {
          await this.#connected;
          const tx = await this.#producer.transaction();
          const messages = batch.flatMap((b) => b.outputs.map((o) => ({ key: o.key, value: o.value, headers: { ...o.headers } })));
          await tx.send({ topic: batch[0]!.outputs[0]!.topic, messages, acks: -1 });
          await tx.commit();
          for (const b of batch) b.resolve();
        } catch (error) {
          for (const b of batch) b.reject(error);
        }
      });
    });
  }

  disconnect(): Promise<void> {
    return this.#producer.disconnect();
  }
}

interface Figures {
  readonly recordsPerSecond: number;
  readonly cpuPerRecord: number;
  readonly redisPerRecord: number;
}

async function run(records: Awaited<ReturnType<typeof fetchRecords>>, handlerOf: (out: string) => Handler, out: string, transactional = false): Promise<Figures> {
  const group = uniqueName('bench');
  await Promise.all([...retryTopics(group, DEFAULTS.retry.tiers).map((t) => t.topic), deadLetterTopic(group)].map((topic) => createTopic(topic, 1)));
  const redis = new Redis('redis://127.0.0.1:6379');
  const commands = countCommands(redis);
  const kafka = new Kafka({ clientId: 'bench', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
  const handOff = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(group) });
  const outputs = transactional ? new TransactionalOutputs(kafka) : new OutputWriter(kafka);
  const sink = { write: handOff.write.bind(handOff), send: outputs.send.bind(outputs) };
  const options = resolveOptions({ group, concurrency: CONCURRENCY }, {});
  const processor = new LanesFunction({ options, handler: handlerOf(out) as never, redis, handOff: () => sink, telemetry: createTelemetry(group) });
  const events: unknown[] = [];
  for (let i = 0; i < records.length; i += BATCH) events.push(eventOf(records.slice(i, i + BATCH)));
  const context = { getRemainingTimeInMillis: () => 600_000 };
  // Warm: the connection open, the scripts loaded, the producer connected, the code compiled.
  const first = JSON.stringify(events[0]);
  const topic = records[0]!.topic;
  await processor.process(JSON.parse(first.replaceAll(`"${topic}`, `"${topic}-warm-up`)), context);
  const before = commands.count;
  const clock = startClock();
  for (const event of events) {
    const response = await processor.process(event, context);
    if (response.batchItemFailures.length > 0) throw new Error('unexpected failures');
  }
  const { seconds, cpuMicros } = clock.stop();
  const calls = commands.count - before;
  await Promise.all([handOff.disconnect(), outputs.disconnect()]);
  redis.disconnect();
  return { recordsPerSecond: records.length / seconds, cpuPerRecord: cpuMicros / records.length, redisPerRecord: calls / records.length };
}

async function main(): Promise<void> {
  const topic = uniqueName('steps-src');
  const out = uniqueName('steps-out');
  await Promise.all([createTopic(topic, 1), createTopic(out, 1)]);
  for (let i = 0; i < RECORDS; i += 5_000) {
    await produce(topic, Array.from({ length: Math.min(5_000, RECORDS - i) }, (_, j) => ({ key: `k${(i + j) % KEYS}`, value: `{"n":${i + j}}` })));
  }
  const records = await fetchRecords(topic, RECORDS);
  const results = CONTENDERS.map(() => [] as Figures[]);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [i, contender] of CONTENDERS.entries()) results[i]!.push(await run(records, contender.handler, out, contender.transactional));
  }
  const cell = (values: number[], digits: number): string => median(values).toFixed(digits).padStart(14);
  console.log(`bench:steps — ${RECORDS.toLocaleString('en-US')} records, one partition, ${KEYS} keys, concurrency ${CONCURRENCY}, batches of ${BATCH}, no handler latency, median of ${ROUNDS} round(s)`);
  console.log(`${''.padEnd(24)}${'records/s'.padStart(14)}${'CPU µs/record'.padStart(14)}${'Redis/record'.padStart(14)}`);
  for (const [i, contender] of CONTENDERS.entries()) {
    const figures = results[i]!;
    console.log(`${contender.label.padEnd(24)}${cell(figures.map((f) => f.recordsPerSecond), 0)}${cell(figures.map((f) => f.cpuPerRecord), 1)}${cell(figures.map((f) => f.redisPerRecord), 4)}`);
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
