/**
 * bench:retry-cost — what a retried record costs in Lambda time: one always-failing record through retry tiers scaled
 * down from the README's (`2s, 4s, 8s`, 4 attempts, then the dead-letter topic), under the offline trigger on the
 * local broker and Redis, the retry function played as AWS plays it. Twice: as a durable function (`suspend`: a copy
 * not due waits suspended between rounds, billing nothing) and as a plain one (`inline`: the invocation waits for the
 * copy, every delay billed), the figure before this mechanism.
 *
 * Prints, per mode: `billed function-seconds per retried record: X (waiting: Y)` (X the retry function's billed time,
 * Y the time its executions waited suspended), each retry's delay as the tiers set it and as observed (the run after
 * the failure before it), and the lateness after due (p50 / p99 / max); then how long a stop of the trigger (Ctrl-C)
 * takes while a copy waits suspended. Figures only, no assertion. Needs `npm run local:up`.
 *
 *   npm run bench:retry-cost
 *   RECORDS=5 MODES=suspend npm run bench:retry-cost
 */
import type { Context } from 'aws-lambda';
import { lanes } from '../src';
import { readHandOffHeaders } from '../src/handoff';
import { deadLetterTopic, retryTopic } from '../src/options';
import type { MappingSpec } from '../src/serverless/offline/mapping';
import { OfflineKafkaTrigger } from '../src/serverless/offline/trigger';
import { inProcessLambda, lanesFunction } from '../test/integration/support/in-process-lambda';
import { produce } from '../test/integration/support/kafka-events';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, REDIS_URL, uniqueName } from '../test/integration/support/stack';
import { percentile } from './support';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TIERS = ['2s', '4s', '8s'];
const DELAYS_MS = [2_000, 4_000, 8_000];
const MAX_ATTEMPTS = 4;
const RECORDS = Number(process.env.RECORDS ?? 1);
const MODES = (process.env.MODES ?? 'suspend,inline').split(',') as Array<'suspend' | 'inline'>;
/** The retry function's timeout: what an inline invocation may wait. */
const FUNCTION_TIMEOUT_MS = 60_000;

interface Run {
  readonly key: string;
  readonly attempt: number;
  readonly at: number;
  /** The copy's due time (absent for the first run, from the source topic). */
  readonly dueAt: number | undefined;
}

interface Figures {
  readonly mode: 'suspend' | 'inline';
  readonly billedS: number;
  readonly suspendedS: number;
  readonly invocations: number;
  readonly executions: number;
  readonly observed: number[][];
  readonly lateness: number[];
}

async function measure(mode: 'suspend' | 'inline'): Promise<Figures> {
  const group = uniqueName(`bench-cost-${mode}`);
  const source = `${group}.source`;
  const topics = [source, ...TIERS.map((tier) => retryTopic(group, tier)), deadLetterTopic(group)];
  await Promise.all(topics.map((topic) => createTopic(topic, 1)));
  const runs: Run[] = [];
  const handler = lanes(
    { group, redis: { url: REDIS_URL }, kafka: { brokers: KAFKA_BROKERS }, retry: { tiers: TIERS, maxAttempts: MAX_ATTEMPTS } },
    async (record, ctx) => {
      runs.push({ key: String(record.key), attempt: ctx.attempt, at: Date.now(), dueAt: readHandOffHeaders(record.headers).dueAtMs });
      throw new Error('always failing');
    },
  );
  const fn = lanesFunction(handler as unknown as (event: never, context: Context) => Promise<unknown>, FUNCTION_TIMEOUT_MS);
  const spec = (functionKey: string, topic: string, durable: boolean): MappingSpec => ({
    functionKey, topic, groupId: `${topic}-esm`, batchSize: 100, batchingWindowMs: 0, startingPosition: 'TRIM_HORIZON',
    startingPositionTimestamp: undefined, reportBatchItemFailures: true, brokers: KAFKA_BROKERS, eventSource: { source: 'SelfManagedKafka' },
    mixPartitions: true, sessionTimeoutMs: 30_000, ...(durable ? { durable: { executionTimeoutMs: 900_000 } } : {}),
  });
  const specs = [spec('fn', source, false), ...TIERS.map((tier) => spec('fnRetry', retryTopic(group, tier), mode === 'suspend'))];
  const trigger = new OfflineKafkaTrigger(inProcessLambda({ fn, fnRetry: fn }), {
    specs,
    committers: [],
    custom: {},
    log: {
      notice: (message) => { if (message.includes('REPORT')) process.stdout.write(`    ${message}\n`); },
      warning: (message) => process.stdout.write(`    ${message}\n`),
    },
  });
  const admin = createKafka().admin();
  await admin.connect();
  try {
    await trigger.start();
    await produce(source, Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i}`, value: '{}' })));
    // Every record dead-lettered and every tier's batch committed: the last execution has ended.
    const settled = async (): Promise<boolean> => {
      if (runs.filter((run) => run.attempt === MAX_ATTEMPTS).length < RECORDS) return false;
      for (const tier of TIERS) {
        const topic = retryTopic(group, tier);
        const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId: `${topic}-esm`, topics: [topic] })]);
        if (Number(committed?.partitions[0]?.offset ?? -1) !== Number(ends[0]?.high ?? 0)) return false;
      }
      return true;
    };
    const until = Date.now() + 110_000;
    while (!(await settled())) {
      if (Date.now() > until) throw new Error(`${mode}: the record did not settle within 110 s (${runs.length} runs)`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await trigger.stop();
    await admin.disconnect();
    await handler.close();
    await deleteTopics(topics);
  }
  const figures = trigger.stats.functions['fnRetry'] ?? { billedMs: 0, suspendedMs: 0, invocations: 0, executions: 0 };
  const observed = TIERS.map((_, i) => runs.filter((run) => run.attempt === i + 2).map((run) => {
    const before = runs.find((r) => r.key === run.key && r.attempt === i + 1)!;
    return run.at - before.at;
  }));
  return {
    mode,
    billedS: figures.billedMs / 1000 / RECORDS,
    suspendedS: figures.suspendedMs / 1000 / RECORDS,
    invocations: figures.invocations,
    executions: figures.executions,
    observed,
    lateness: runs.filter((run) => run.dueAt !== undefined).map((run) => run.at - run.dueAt!).sort((a, b) => a - b),
  };
}

function report(f: Figures): void {
  const sum = DELAYS_MS.reduce((a, b) => a + b, 0) / 1000;
  process.stdout.write(`  ${f.mode}: billed function-seconds per retried record: ${f.billedS.toFixed(3)} (waiting: ${f.suspendedS.toFixed(3)} s suspended)\n`);
  process.stdout.write(`    ${f.invocations} invocations of the retry function${f.executions > 0 ? ` in ${f.executions} durable executions` : ''}; ` +
    `billed ${((f.billedS / sum) * 100).toFixed(1)} % of the ${sum} s of delays\n`);
  TIERS.forEach((tier, i) => {
    const seen = f.observed[i]!.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', ');
    process.stdout.write(`    retry ${i + 1} (tier ${tier}): due ${(DELAYS_MS[i]! / 1000).toFixed(2)} s after the failure, ran ${seen} after it\n`);
  });
  const l = f.lateness;
  process.stdout.write(`    lateness after due: p50 ${percentile(l, 50)} ms, p99 ${percentile(l, 99)} ms, max ${l[l.length - 1]} ms, earliest ${l[0]} ms (${l.length} retries)\n`);
}

/** How long a stop of the trigger (Ctrl-C) takes while a copy waits suspended in a 30 s tier. */
async function stopWhileWaiting(): Promise<number> {
  const group = uniqueName('bench-cost-stop');
  const source = `${group}.source`;
  const topics = [source, retryTopic(group, '30s'), deadLetterTopic(group)];
  await Promise.all(topics.map((topic) => createTopic(topic, 1)));
  const handler = lanes({ group, redis: { url: REDIS_URL }, kafka: { brokers: KAFKA_BROKERS }, retry: { tiers: ['30s'], maxAttempts: 2 } }, async () => {
    throw new Error('always failing');
  });
  const fn = lanesFunction(handler as unknown as (event: never, context: Context) => Promise<unknown>, FUNCTION_TIMEOUT_MS);
  const base = { batchSize: 100, batchingWindowMs: 0, startingPosition: 'TRIM_HORIZON', startingPositionTimestamp: undefined, reportBatchItemFailures: true, brokers: KAFKA_BROKERS, eventSource: { source: 'SelfManagedKafka' }, mixPartitions: true, sessionTimeoutMs: 30_000 } as const;
  const specs: MappingSpec[] = [
    { ...base, functionKey: 'fn', topic: source, groupId: `${source}-esm` },
    { ...base, functionKey: 'fnRetry', topic: retryTopic(group, '30s'), groupId: `${group}-retry-esm`, durable: { executionTimeoutMs: 900_000 } },
  ];
  const notices: string[] = [];
  const trigger = new OfflineKafkaTrigger(inProcessLambda({ fn, fnRetry: fn }), { specs, committers: [], custom: {}, log: { notice: (m) => notices.push(m), warning: (m) => notices.push(m) } });
  try {
    await trigger.start();
    await produce(source, [{ key: 'k', value: '{}' }]);
    const until = Date.now() + 60_000;
    while ((trigger.stats.functions['fnRetry']?.invocations ?? 0) === 0) {
      if (Date.now() > until) throw new Error('the retry function never ran');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The first round has started: let it leave the copy waiting.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = performance.now();
    await trigger.stop();
    const seconds = (performance.now() - started) / 1000;
    for (const notice of notices.filter((n) => n.includes('left uncommitted'))) process.stdout.write(`    ${notice}\n`);
    return seconds;
  } finally {
    await handler.close();
    await deleteTopics(topics);
  }
}

async function main(): Promise<void> {
  process.stdout.write(`${RECORDS} always-failing record(s), tiers ${TIERS.join(', ')}, ${MAX_ATTEMPTS} attempts, under the offline trigger on ${KAFKA_BROKERS.join(',')}\n`);
  const all: Figures[] = [];
  for (const mode of MODES) {
    const figures = await measure(mode);
    report(figures);
    all.push(figures);
  }
  if (MODES.includes('suspend')) {
    process.stdout.write('  stop (Ctrl-C) with a copy waiting suspended in a 30 s tier:\n');
    process.stdout.write(`    returned in ${(await stopWhileWaiting()).toFixed(2)} s\n`);
  }
  const after = all.find((f) => f.mode === 'suspend');
  const before = all.find((f) => f.mode === 'inline');
  if (after !== undefined && before !== undefined) {
    process.stdout.write(`before (inline waits): ${before.billedS.toFixed(3)} billed function-seconds per retried record; ` +
      `after (suspended waits): ${after.billedS.toFixed(3)}, ${((after.billedS / before.billedS) * 100).toFixed(1)} % of before\n`);
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
