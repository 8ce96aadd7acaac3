/**
 * bench:steps — what durable steps and outputs cost: records/s, process CPU µs per record, Redis calls and output
 * produce requests per record for a handler with 0, 1 and 3 steps per record, one with one output per record
 * (`ctx.send`) and a second stage (records that are another stage's outputs, read with `dedupeOutputs`), on one partition (KEYS keys, key ordering, CONCURRENCY at once). Two tables: no handler latency (the
 * framework's own cost, RECORDS records) and a LATENCY_MS handler (the realistic case, LATENCY_RECORDS records),
 * each row beside the table's first (no steps, no outputs) measured in the same round: its records/s ratio and its
 * extra CPU per record. ROUNDS rounds run every contender once each, interleaved; a cell is the median over its
 * rounds. Every run starts warm (one untimed invocation under another topic name). Needs the local Kafka and Redis.
 *
 *   npm run bench:steps
 *   RECORDS=5000 ROUNDS=1 npm run bench:steps     # a quick run
 *   LATENCY_MS=0 npm run bench:steps              # the no-latency table only
 *   CONTENDERS='1 step;dedupeOutputs' ROUNDS=7 npm run bench:steps   # some rows only (beside the first), more rounds
 *   npm run bench:steps -- --cpu-prof             # PROFILE_CONTENDER ('1 step') alone in a V8 CPU profile
 *   PROFILE_CONTENDER='1 output' PROFILE_LATENCY=1 npm run bench:steps -- --cpu-prof   # with the LATENCY_MS handler
 *   PROFILE_CONTENDER='1 hand-off, unordered' npm run bench:steps -- --heap-prof   # bytes allocated per record, by room and site
 *
 * Two floors are measured beside the rows they bound. `1 step, no store (1 turn)` is one step whose store is a
 * promise resolved on the next turn of the event loop, no Redis: the least a step that waits for I/O before it returns
 * can cost. With the `1 output` row, each round also runs kafkajs's idempotent producer alone on the same messages, in
 * sends of as many messages as that row's sends carried: the line under the first table gives its CPU per message,
 * the part of an output's cost that is kafkajs's.
 *
 * Redis calls are commands sent (script calls, the step read, deletes): each is one round trip for its record, and
 * calls of records running at once share the connection (ioredis writes them without waiting for replies). Redis CPU
 * is the server's own (`INFO cpu`, user and system) over the timed loop, per record: with no latency, when it nears a
 * core's worth of the records/s, Redis and not this process bounds the row.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { OUTPUT_HEADER } from '../src/lanes/effects';
import type { EffectsPort } from '../src/ports/effects';
import type { OutputMessage } from '../src/ports/handoff';
import { CompletionStore } from '../src/completion/store';
import { RedisEffects } from '../src/completion/effects-store';
import { LanesCore } from '../src/handler/lanes-core';
import type { KafkaRecordInput } from '../src/event/encode';
import { HandOffWriter } from '../src/handoff';
import { OutputWriter } from '../src/handoff/output-writer';
import { DEFAULTS, deadLetterTopic, resolveOptions, retryTopics } from '../src/options';
import { LanesFunction, type LanesContext, type LanesRecord } from '../src/handler/lanes-function';
import { createTelemetry } from '../src/telemetry';
import { eventOf, fetchRecords, produce } from '../test/integration/support/kafka-events';
import { createTopic, uniqueName, KAFKA_BROKERS } from '../test/integration/support/stack';
import { countCommands, heapProfiled, median, printHeapProfile, printProfile, profiled, runBenchmark, startClock, type CpuProfile } from './support';
import { kafkaClientName, producerFactory } from './kafka-client';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const RECORDS = Number(process.env.RECORDS ?? 20_000);
const BATCH = Number(process.env.BATCH ?? 10_000);
const KEYS = Number(process.env.KEYS ?? 1_000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 10);
const LATENCY_RECORDS = Number(process.env.LATENCY_RECORDS ?? RECORDS);
const PROFILE_INTERVAL_US = Number(process.env.PROFILE_INTERVAL_US ?? 100);
const PROFILE = process.argv.includes('--cpu-prof');
/** `--heap-prof`: the profiled run in a sampling heap profile instead (bytes allocated per record, by room and site). */
const HEAP_PROFILE = process.argv.includes('--heap-prof');
/** CONTENDERS='1 step;1 output, transactions': only these rows, by label, separated by `;` (labels hold commas), and the first, the one the others are read against. */
const ONLY = process.env.CONTENDERS?.split(';').map((label) => label.trim());
/** The contender the profile runs (its label). */
const PROFILE_CONTENDER = process.env.PROFILE_CONTENDER ?? '1 step';
const ROOT = join(__dirname, '..');
/** The Kafka client the writers run on (bench/kafka-client): kafkajs, the client in use, unless a candidate is named. */
const KAFKA_CLIENT = kafkaClientName();
/** FIGURES_JSON=path: also write every row's medians there (bench/kafka-clients.ts reads them). */
const FIGURES_JSON = process.env.FIGURES_JSON;

type Handler = (record: LanesRecord, ctx: LanesContext) => Promise<void>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Contender {
  readonly label: string;
  readonly transactional?: boolean;
  /** A second stage: its records are outputs of another stage (an identity header), read with `dedupeOutputs`. */
  readonly dedupe?: boolean;
  /** Records run in `unordered` mode (no lanes): each failure is handed off, none parked behind it. */
  readonly unordered?: boolean;
  /**
   * `turn`: the step store is replaced by a promise resolved on the next turn of the event loop, with no Redis: the
   * least any step that waits for I/O before it returns can cost (the floor under the `1 step` row).
   */
  readonly stepStore?: 'turn';
  /** The handler's own work before its steps and outputs (ms); 0: none, the framework's cost alone. */
  readonly latencyMs: number;
  readonly handler: (out: string) => Handler;
}

const FIRST_RUN_FAILS = new Error('fails its first run: handed off to the retry topic');

/** The handlers measured, each with no latency and again with a LATENCY_MS handler (the realistic case). */
function contenders(latencyMs: number): Contender[] {
  const wait = latencyMs === 0 ? (): Promise<void> => Promise.resolve() : (): Promise<void> => sleep(latencyMs);
  const list: Contender[] = [
    { label: 'no steps, no outputs', latencyMs, handler: () => async () => { await wait(); } },
    { label: '1 step', latencyMs, handler: () => async (_r, ctx) => { await wait(); await ctx.step('a', () => 1); } },
    {
      label: '3 steps',
      latencyMs,
      handler: () => async (_r, ctx) => {
        await wait();
        await ctx.step('a', () => 1);
        await ctx.step('b', () => 'two');
        await ctx.step('c', () => ({ three: 3 }));
      },
    },
    { label: '1 output', latencyMs, handler: (out) => async (r, ctx) => { await wait(); ctx.send(out, { key: r.rawKey, value: r.rawValue }); } },
    { label: 'dedupeOutputs', latencyMs, dedupe: true, handler: () => async () => { await wait(); } },
  ];
  if (latencyMs === 0) {
    // A record handed off once: every record fails its first run and goes to the first retry tier. Unordered, so
    // each failure is one hand-off and no later record of its key is parked behind it; read against its own clean
    // twin (`no steps, unordered`).
    list.push({ label: 'no steps, unordered', latencyMs, unordered: true, handler: () => async () => {} });
    list.push({
      label: '1 hand-off, unordered',
      latencyMs,
      unordered: true,
      // One error made once: capturing a stack per record is the handler's cost (about 8 µs here), not the framework's.
      handler: () => async () => {
        throw FIRST_RUN_FAILS;
      },
    });
    list.push({ label: '1 step, no store (1 turn)', latencyMs, stepStore: 'turn', handler: () => async (_r, ctx) => { await ctx.step('a', () => 1); } });
    list.push({
      label: '1 output, transactions',
      latencyMs,
      transactional: true,
      handler: (out) => async (r, ctx) => { ctx.send(out, { key: r.rawKey, value: r.rawValue }); },
    });
  }
  if (ONLY === undefined) return list;
  // The no-latency table has every row (some only there): labels are checked against it.
  const unknown = ONLY.filter((label) => !list.some((c) => c.label === label));
  if (latencyMs === 0 && unknown.length > 0) {
    throw new Error(`CONTENDERS: expected labels among ${list.map((c) => `'${c.label}'`).join(', ')}, got ${unknown.map((l) => `'${l}'`).join(', ')}`);
  }
  // The first contender stays: every other row is read against it.
  return list.filter((c, i) => i === 0 || ONLY.includes(c.label));
}

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
  /** Transactions so far (one send each). */
  sends = 0;

  constructor(kafka: Kafka) {
    this.#producer = kafka.producer({ transactionalId: uniqueName('bench-tx'), idempotent: true, maxInFlightRequests: 1 });
    this.#connected = this.#producer.connect();
  }

  send(records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ outputs: records.flat(), resolve, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      this.#chain = this.#chain.then(async () => {
        this.#scheduled = false;
        const batch = this.#queue.splice(0);
        this.sends += 1;
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
    }).then(() => records.map(() => undefined));
  }

  disconnect(): Promise<void> {
    return this.#producer.disconnect();
  }
}

interface Figures {
  readonly recordsPerSecond: number;
  readonly cpuPerRecord: number;
  readonly redisPerRecord: number;
  /** The Redis server's CPU (µs) per record over the timed loop. */
  readonly redisCpuPerRecord: number;
  /** Output produce requests per record (the output writer's sends). */
  readonly sendsPerRecord: number;
}

/** The record as an output of an upstream stage: the identity header `ctx.send` gives it, one output per origin. */
function asOutput(record: KafkaRecordInput): KafkaRecordInput {
  const header = (name: string, value: string): { name: string; value: Uint8Array } => ({ name, value: Buffer.from(value) });
  return {
    ...record,
    headers: [
      ...(record.headers ?? []),
      header(OUTPUT_HEADER, `bench-upstream/${record.topic}-upstream/${record.partition}/${record.offset}/0`),
    ],
  };
}

async function run(
  records: Awaited<ReturnType<typeof fetchRecords>>,
  contender: Contender,
  out: string,
  concurrency: number,
  around: <T>(loop: () => Promise<T>) => Promise<T> = (loop) => loop(),
): Promise<Figures> {
  const group = uniqueName('bench');
  await Promise.all([...retryTopics(group, DEFAULTS.retry.tiers).map((t) => t.topic), deadLetterTopic(group)].map((topic) => createTopic(topic, 1)));
  const redis = new Redis('redis://127.0.0.1:6379');
  const commands = countCommands(redis);
  const kafka = producerFactory(KAFKA_CLIENT, KAFKA_BROKERS);
  const handOff = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(group) });
  // The transactions row stays on kafkajs whatever KAFKA_CLIENT says: it weighs transactions, not clients.
  const outputs = contender.transactional === true
    ? new TransactionalOutputs(new Kafka({ clientId: 'bench', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }))
    : new OutputWriter(kafka);
  const sink = { write: handOff.write.bind(handOff), send: outputs.send.bind(outputs) };
  const options = resolveOptions(
    { group, concurrency, ...(contender.dedupe === true ? { dedupeOutputs: true } : {}), ...(contender.unordered === true ? { ordering: 'unordered' as const } : {}) },
    {},
  );
  // Every record must run its handler once (a second stage's outputs are not repeats): counted, checked below.
  let ran = 0;
  const inner = contender.handler(out);
  const handler: Handler = (record, ctx) => {
    ran += 1;
    return inner(record, ctx);
  };
  const parts = { options, handler: handler as never, handOff: () => sink, telemetry: createTelemetry(group) };
  const processor = contender.stepStore === 'turn'
    ? new LanesCore({ ...parts, store: new CompletionStore(redis, options.caps), effects: storedInOneTurn(new RedisEffects(redis)) })
    : new LanesFunction({ ...parts, store: new CompletionStore(redis, options.caps) });
  const measured = contender.dedupe === true ? records.map(asOutput) : records;
  const events: unknown[] = [];
  for (let i = 0; i < measured.length; i += BATCH) events.push(eventOf(measured.slice(i, i + BATCH)));
  const context = { getRemainingTimeInMillis: () => 600_000 };
  // Warm: the connection open, the scripts loaded, the producer connected, the code compiled (under another topic
  // name, so other records and, for a second stage, other outputs).
  const warm = records.slice(0, BATCH).map((record) => ({ ...record, topic: `${record.topic}-warm-up` }));
  await processor.process(eventOf(contender.dedupe === true ? warm.map(asOutput) : warm), context);
  ran = 0;
  const redisCpuBefore = await redisCpuMicros(redis);
  const before = commands.count;
  const sendsBefore = outputs.sends;
  const { seconds, cpuMicros } = await around(async () => {
    const clock = startClock();
    for (const event of events) {
      const response = await processor.process(event, context);
      if (response.batchItemFailures.length > 0) throw new Error(`${contender.label}: ${response.batchItemFailures.length} record(s) not processed`);
    }
    return clock.stop();
  });
  if (ran !== records.length) throw new Error(`${contender.label}: expected each of ${records.length} records to run once, ${ran} runs`);
  const calls = commands.count - before;
  const redisCpu = (await redisCpuMicros(redis)) - redisCpuBefore;
  const sends = outputs.sends - sendsBefore;
  await Promise.all([handOff.disconnect(), outputs.disconnect()]);
  redis.disconnect();
  return { recordsPerSecond: records.length / seconds, cpuPerRecord: cpuMicros / records.length, redisPerRecord: calls / records.length, redisCpuPerRecord: redisCpu / records.length, sendsPerRecord: sends / records.length };
}

/** The Kafka client's idempotent producer alone: one round's figures. */
interface ProducerFigures {
  readonly cpuPerMessage: number;
  readonly messagesPerSecond: number;
  readonly perSend: number;
}

/**
 * The floor under an output's cost: the client's idempotent producer (acks=all, one request in flight, as the output
 * writer makes it) sending the `1 output` row's messages itself, in sends of as many messages as that row's sends
 * carried in the same round, one after another. No framework code runs: its CPU per message is the client's alone.
 */
async function producerAlone(records: readonly KafkaRecordInput[], out: string, perSend: number): Promise<ProducerFigures> {
  const producer = producerFactory(KAFKA_CLIENT, KAFKA_BROKERS, 'bench-producer').producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  const group = uniqueName('bench-alone');
  const messages = records.map((record) => ({
    key: record.key === null || record.key === undefined ? null : Buffer.from(record.key),
    value: record.value === null || record.value === undefined ? null : Buffer.from(record.value),
    headers: { [OUTPUT_HEADER]: `${group}/${record.topic}/${record.partition}/${record.offset}/0` },
  }));
  const send = (from: number): Promise<unknown> => producer.sendBatch({ topicMessages: [{ topic: out, messages: messages.slice(from, from + perSend) }], acks: -1 });
  await send(0);
  const clock = startClock();
  for (let from = 0; from < messages.length; from += perSend) await send(from);
  const { seconds, cpuMicros } = clock.stop();
  await producer.disconnect();
  return { cpuPerMessage: cpuMicros / messages.length, messagesPerSecond: messages.length / seconds, perSend };
}

/**
 * The Redis effects store with its step store replaced: a step is "stored" on the next turn of the event loop. The
 * first store is real: once the store has seen a step it reads the partition's `stepped` marker at each admission,
 * so the records' first runs read no steps, as in the `1 step` row.
 */
function storedInOneTurn(real: RedisEffects): EffectsPort {
  let seen = false;
  return {
    loadSteps: (at) => real.loadSteps(at),
    saveStep: (at, name, value, ttlMs) => {
      if (!seen) {
        seen = true;
        return real.saveStep(at, name, value, ttlMs);
      }
      return new Promise<undefined>((resolve) => setImmediate(resolve, undefined));
    },
    stepsStoredUpTo: (ref) => real.stepsStoredUpTo(ref),
    forgetSteps: (at) => real.forgetSteps(at),
    claimOutput: (group, id, runner, ttlMs) => real.claimOutput(group, id, runner, ttlMs),
  };
}

/** The Redis server's CPU so far, user and system, in µs. */
async function redisCpuMicros(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const seconds = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
}

async function prepare(): Promise<{ records: Awaited<ReturnType<typeof fetchRecords>>; out: string }> {
  const topic = uniqueName('steps-src');
  const out = uniqueName('steps-out');
  await Promise.all([createTopic(topic, 1), createTopic(out, 1)]);
  const total = Math.max(RECORDS, LATENCY_RECORDS);
  for (let i = 0; i < total; i += 5_000) {
    await produce(topic, Array.from({ length: Math.min(5_000, total - i) }, (_, j) => ({ key: `k${(i + j) % KEYS}`, value: `{"n":${i + j}}` })));
  }
  return { records: await fetchRecords(topic, total), out };
}

/** One contender (PROFILE_CONTENDER, with LATENCY_MS when PROFILE_LATENCY is set) in a V8 CPU profile, or a heap profile. */
async function profileOne(): Promise<void> {
  const { records, out } = await prepare();
  const latencyMs = process.env.PROFILE_LATENCY === undefined ? 0 : LATENCY_MS;
  const contender = contenders(latencyMs).find((c) => c.label === PROFILE_CONTENDER);
  if (contender === undefined) throw new Error(`PROFILE_CONTENDER: expected one of ${contenders(0).map((c) => `\`${c.label}\``).join(', ')}, got \`${PROFILE_CONTENDER}\``);
  let profile: CpuProfile | undefined;
  let heap: Awaited<ReturnType<typeof heapProfiled>>['profile'] | undefined;
  const measured = records.slice(0, latencyMs === 0 ? RECORDS : LATENCY_RECORDS);
  const figures = await run(measured, contender, out, CONCURRENCY, async (loop) => {
    if (HEAP_PROFILE) {
      const done = await heapProfiled(loop);
      heap = done.profile;
      return done.result;
    }
    const done = await profiled(PROFILE_INTERVAL_US, loop);
    profile = done.profile;
    return done.result;
  });
  console.log(`bench:steps, profiled: ${contender.label}, ${latencyMs} ms handler, concurrency ${CONCURRENCY}`);
  console.log(`  ${figures.recordsPerSecond.toFixed(0)} records/s, ${figures.cpuPerRecord.toFixed(1)} CPU µs/record (profiler on: both worse than unprofiled)`);
  if (heap !== undefined) printHeapProfile(heap, ROOT, measured.length);
  else printProfile(profile!, ROOT, `bench-steps-${contender.label.replace(/\W+/g, '-')}`, PROFILE_INTERVAL_US);
}

/** A contender's figures per round, and each round's ratio to the first contender of its table (no steps, no outputs). */
interface Column {
  readonly contender: Contender;
  readonly rounds: Figures[];
  readonly ratios: number[];
  readonly extraCpu: number[];
}

function printTable(title: string, columns: readonly Column[]): void {
  const cell = (values: number[], digits: number, width = 14): string => median(values).toFixed(digits).padStart(width);
  console.log(`\n${title}`);
  console.log(`${''.padEnd(24)}${'records/s'.padStart(14)}${'÷ no steps'.padStart(12)}${'CPU µs/record'.padStart(14)}${'+ CPU µs'.padStart(10)}${'Redis/record'.padStart(14)}${'Redis CPU µs'.padStart(14)}${'sends/record'.padStart(14)}`);
  for (const { contender, rounds, ratios, extraCpu } of columns) {
    console.log(
      `${contender.label.padEnd(24)}${cell(rounds.map((f) => f.recordsPerSecond), 0)}${cell(ratios, 2, 12)}${cell(rounds.map((f) => f.cpuPerRecord), 1)}` +
        `${cell(extraCpu, 1, 10)}${cell(rounds.map((f) => f.redisPerRecord), 4)}${cell(rounds.map((f) => f.redisCpuPerRecord), 1)}${cell(rounds.map((f) => f.sendsPerRecord), 4)}`,
    );
  }
}

async function main(): Promise<void> {
  if (PROFILE || HEAP_PROFILE) return profileOne();
  const { records, out } = await prepare();
  const tables = [
    { records: records.slice(0, RECORDS), columns: contenders(0).map((contender): Column => ({ contender, rounds: [], ratios: [], extraCpu: [] })) },
    ...(LATENCY_MS > 0 && LATENCY_RECORDS > 0
      ? [{ records: records.slice(0, LATENCY_RECORDS), columns: contenders(LATENCY_MS).map((contender): Column => ({ contender, rounds: [], ratios: [], extraCpu: [] })) }]
      : []),
  ];
  const alone: ProducerFigures[] = [];
  // Contenders interleaved: every round runs each once, so a slower spell of the machine hits all of them.
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const { records: measured, columns } of tables) {
      for (const column of columns) column.rounds.push(await run(measured, column.contender, out, CONCURRENCY));
      const base = columns[0]!.rounds[round]!;
      for (const column of columns) {
        const figures = column.rounds[round]!;
        column.ratios.push(figures.recordsPerSecond / base.recordsPerSecond);
        column.extraCpu.push(figures.cpuPerRecord - base.cpuPerRecord);
      }
    }
    // Beside the no-latency table's `1 output`, in the same round: kafkajs's share of it.
    const output = tables[0]!.columns.find((column) => column.contender.label === '1 output')?.rounds[round];
    if (output !== undefined) {
      const perSend = output.sendsPerRecord > 0 ? Math.round(1 / output.sendsPerRecord) : tables[0]!.records.length;
      alone.push(await producerAlone(tables[0]!.records, out, perSend));
    }
  }
  console.log(`bench:steps — Kafka client ${KAFKA_CLIENT}; one partition, ${KEYS} keys, concurrency ${CONCURRENCY}, batches of ${BATCH}, median of ${ROUNDS} round(s); ratios and extra CPU against the first row of the same round`);
  printTable(`no handler latency, ${RECORDS.toLocaleString('en-US')} records (the framework's own cost)`, tables[0]!.columns);
  let producer: { cpuPerMessage: number; messagesPerSecond: number; perSend: number } | undefined;
  if (alone.length > 0) {
    const output = tables[0]!.columns.find((column) => column.contender.label === '1 output')!;
    producer = {
      cpuPerMessage: median(alone.map((a) => a.cpuPerMessage)),
      messagesPerSecond: median(alone.map((a) => a.messagesPerSecond)),
      perSend: median(alone.map((a) => a.perSend)),
    };
    console.log(
      `${KAFKA_CLIENT}'s idempotent producer alone, the same messages in sends of ${producer.perSend.toFixed(0)} (as \`1 output\` sent them): ` +
        `${producer.messagesPerSecond.toFixed(0)} messages/s, ${producer.cpuPerMessage.toFixed(1)} CPU µs/message, ` +
        `so about ${Math.max(0, median(output.extraCpu) - producer.cpuPerMessage).toFixed(1)} of \`1 output\`'s + CPU µs are the framework's`,
    );
  }
  const handedOff = extraOver(tables[0]!.columns, '1 hand-off, unordered', 'no steps, unordered');
  if (handedOff !== undefined) {
    console.log(`a record handed off once (\`1 hand-off, unordered\` over \`no steps, unordered\`, same rounds): + ${handedOff.toFixed(1)} CPU µs/record`);
  }
  if (tables[1] !== undefined) {
    printTable(`${LATENCY_MS} ms handler, ${LATENCY_RECORDS.toLocaleString('en-US')} records (bound: ${(CONCURRENCY / (LATENCY_MS / 1000)).toLocaleString('en-US')} records/s)`, tables[1].columns);
  }
  if (FIGURES_JSON !== undefined) {
    const rows = (columns: readonly Column[]): Record<string, unknown> =>
      Object.fromEntries(columns.map(({ contender, rounds, ratios, extraCpu }) => [contender.label, {
        recordsPerSecond: median(rounds.map((f) => f.recordsPerSecond)),
        cpuPerRecord: median(rounds.map((f) => f.cpuPerRecord)),
        ratio: median(ratios),
        extraCpu: median(extraCpu),
        sendsPerRecord: median(rounds.map((f) => f.sendsPerRecord)),
      }]));
    writeFileSync(FIGURES_JSON, JSON.stringify({
      client: KAFKA_CLIENT,
      noLatency: rows(tables[0]!.columns),
      ...(tables[1] === undefined ? {} : { latency: rows(tables[1].columns) }),
      ...(producer === undefined ? {} : { producer }),
      ...(handedOff === undefined ? {} : { handedOffExtraCpu: handedOff }),
    }, null, 2));
  }
}

/** The median over rounds of one row's CPU per record minus another's, measured in the same round. */
function extraOver(columns: readonly Column[], label: string, over: string): number | undefined {
  const row = columns.find((column) => column.contender.label === label);
  const base = columns.find((column) => column.contender.label === over);
  if (row === undefined || base === undefined) return undefined;
  return median(row.rounds.map((figures, round) => figures.cpuPerRecord - base.rounds[round]!.cpuPerRecord));
}

runBenchmark(main);
