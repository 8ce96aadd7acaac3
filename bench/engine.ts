/**
 * bench:engine — the engine's own CPU per record, without the network: `Engine.run` over the source path on a store
 * that admits every record to run and takes every done bit at once (no Redis), and a sink that acknowledges every copy.
 * What it leaves out (Redis and kafkajs on the wire, their sockets, the admit script's arguments) is what makes
 * bench:processor's figures swing on a loaded machine; what it keeps is the function's own part: decoding the event,
 * admission, the scheduler, a record's run, its deadline, its context and view, deserializing, done bits, the run
 * report. Nothing fails, so no hand-off runs.
 *
 * Runs, each over RECORDS records of KEYS keys (key ordering) in events of BATCH records, ROUNDS rounds interleaved:
 * a no-op handler at concurrency 200, a LATENCY_MS handler at concurrency 1,000, and a handler sending one output
 * (`ctx.send`) at concurrency 200, the sink acknowledging it at once. Prints records/s and process CPU
 * µs per record (user + system over the loop), and with FIGURES_JSON their medians as bench/interleave.ts reads them:
 *
 *   npm run bench:engine
 *   npm run bench:engine -- --heap-prof   # each row once in a sampling heap profile: bytes allocated per record, by room and site
 *   BASE=/work/base BENCH=engine npm run bench:interleave   # beside another checkout, one process per run (PAIRS pairs)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Engine } from '../src/engine/engine';
import type { RecordHandler } from '../src/engine/types';
import { pathParts } from '../src/engine/run-scope';
import { decodeKafkaEventLazily, encodeKafkaEvent, type AwsKafkaEvent } from '../src/event';
import { resolveOptions } from '../src/options';
import { SourcePath } from '../src/source/source-path';
import type { AdmitRecord, AdmitResult, CompletionPort, PartitionRef } from '../src/ports';
import { EffectsModel } from '../src/testing/effects-model';
import { sourceRecords, RecordingSink, within } from '../test/support/engine-rig';
import { heapProfiled, median, printHeapProfile, runBenchmark } from './support';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const RECORDS = Number(process.env.RECORDS ?? 100_000);
const KEYS = Number(process.env.KEYS ?? 1_000);
const BATCH = Number(process.env.BATCH ?? 10_000);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const FIGURES_JSON = process.env.FIGURES_JSON;
const HEAP_PROFILE = process.argv.includes('--heap-prof');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Every record runs, every done bit is stored: the least a store can answer (the unit tests' model costs far more). */
class RunEveryRecord {
  admit(_ref: PartitionRef, records: readonly AdmitRecord[]): Promise<AdmitResult> {
    return Promise.resolve({ statuses: records.map(() => 'run' as const), handoffHeads: [], backPressure: false, window: undefined });
  }

  markDone(_ref: PartitionRef, offsets: readonly number[]): Promise<number> {
    return Promise.resolve(offsets.length);
  }

  withLimits(): this {
    return this;
  }
}

interface Row {
  readonly recordsPerSecond: number;
  readonly cpuPerRecord: number;
}

/** The events of one run, made before its clock starts (the event source's work, not the function's). */
function eventsOf(offsetBase: number): AwsKafkaEvent[] {
  const records = sourceRecords(RECORDS, KEYS).map((record) => ({ ...record, offset: record.offset + offsetBase }));
  const events: AwsKafkaEvent[] = [];
  for (let at = 0; at < records.length; at += BATCH) events.push(encodeKafkaEvent({ source: 'SelfManagedKafka', records: records.slice(at, at + BATCH) }));
  return events;
}

async function runOnce(concurrency: number, latencyMs: number, output = false, head = ''): Promise<Row> {
  const options = resolveOptions({ group: 'bench', concurrency }, {});
  const logger = new Logger({ logLevel: 'SILENT' });
  const handler: RecordHandler = output
    ? async (_record, ctx): Promise<void> => ctx.send('bench-out', { value: 'x' })
    : latencyMs > 0 ? (): Promise<void> => sleep(latencyMs) : async (): Promise<void> => undefined;
  const telemetry = { logger, metrics: new Metrics({ namespace: 'bench', serviceName: 'bench' }) };
  const effects = output ? { effects: new EffectsModel() } : {};
  const engine = new Engine({ options, handler, store: new RunEveryRecord() as unknown as CompletionPort, telemetry, ...effects });
  const paths = pathParts(options, logger);
  const sink = new RecordingSink();
  // Warm: one invocation first, as in an execution environment past its cold start.
  for (const event of eventsOf(0).slice(0, 1)) await engine.run(new SourcePath(paths), decodeKafkaEventLazily(event).partitions, sink, within(60_000));
  const events = eventsOf(RECORDS);
  const loop = async (): Promise<Row> => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (const event of events) {
      const response = await engine.run(new SourcePath(paths), decodeKafkaEventLazily(event).partitions, sink, within(600_000));
      if (response.batchItemFailures.length > 0) throw new Error(`${response.batchItemFailures.length} records reported for redelivery`);
    }
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    return { recordsPerSecond: RECORDS / seconds, cpuPerRecord: (used.user + used.system) / RECORDS };
  };
  if (!HEAP_PROFILE) return loop();
  const { result, profile } = await heapProfiled(loop);
  console.log(`\n${head}: ${RECORDS} records, sampling heap profile`);
  printHeapProfile(profile, join(__dirname, '..'), RECORDS);
  return result;
}

async function main(): Promise<void> {
  const runs = [
    { head: 'no-op c200', concurrency: 200, latencyMs: 0 },
    { head: `c1000 ${LATENCY_MS}ms`, concurrency: 1_000, latencyMs: LATENCY_MS },
    // One output per record, acknowledged at once by the sink: the engine's side of `ctx.send`.
    { head: '1 output c200', concurrency: 200, latencyMs: 0, output: true },
  ];
  const rounds = new Map<string, Row[]>(runs.map((run) => [run.head, []]));
  console.log(`bench:engine: ${RECORDS} records, ${KEYS} keys, events of ${BATCH}, ${ROUNDS} round(s), node ${process.version}`);
  for (let round = 1; round <= (HEAP_PROFILE ? 1 : ROUNDS); round += 1) {
    for (const run of runs) {
      const row = await runOnce(run.concurrency, run.latencyMs, run.output, run.head);
      rounds.get(run.head)!.push(row);
      console.log(`  round ${round}: ${run.head}: ${Math.round(row.recordsPerSecond).toLocaleString('en-US')} records/s, ${row.cpuPerRecord.toFixed(2)} CPU µs/record`);
    }
  }
  const columns = Object.fromEntries([...rounds].map(([head, rows]) => [head, {
    rounds: rows,
    median: { recordsPerSecond: median(rows.map((r) => r.recordsPerSecond)), cpuPerRecord: median(rows.map((r) => r.cpuPerRecord)) },
  }]));
  for (const [head, column] of Object.entries(columns)) {
    console.log(`${head}: median ${Math.round(column.median.recordsPerSecond).toLocaleString('en-US')} records/s, ${column.median.cpuPerRecord.toFixed(2)} CPU µs/record`);
  }
  if (FIGURES_JSON !== undefined) writeFileSync(FIGURES_JSON, JSON.stringify({ columns }, null, 2));
}

runBenchmark(main);
