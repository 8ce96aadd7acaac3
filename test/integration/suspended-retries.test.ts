/**
 * Retries that wait suspended, end to end on the real broker and Redis: the offline trigger plays the retry function
 * as a durable function (its tiers' mappings carry `durable`), the handler is `lanes()`'s own, and each round runs in
 * this process (test/support's in-process runtime). Per key the records run in order across the tiers, no retry runs
 * before its due time, and a stop of the trigger while copies wait loses nothing: its batch is left uncommitted, and
 * a trigger started again runs the copies, when due, and the records behind them.
 */
import type { Context } from 'aws-lambda';
import type { Admin } from 'kafkajs';
import { lanes } from '../../src';
import { readHandOffHeaders } from '../../src/handoff';
import { deadLetterTopic, retryTopic } from '../../src/options';
import type { MappingSpec } from '../../src/serverless/offline/mapping';
import { OfflineKafkaTrigger } from '../../src/serverless/offline/trigger';
import { inProcessLambda, lanesFunction } from './support/in-process-lambda';
import { produce } from './support/kafka-events';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

interface Run {
  readonly key: string;
  readonly offset: number;
  readonly attempt: number;
  readonly at: number;
  /** The copy's due time; absent for a record's run from its source topic. */
  readonly dueAt: number | undefined;
  readonly outcome: 'succeeded' | 'failed';
}

const topics: string[] = [];
let admin: Admin;

beforeAll(async () => {
  admin = createKafka().admin();
  await admin.connect();
});

afterAll(async () => {
  await admin.disconnect();
  await deleteTopics(topics);
});

/** Waits for a condition, polling; fails naming it (the limit only bounds a broken run). */
async function waitFor(condition: () => boolean | Promise<boolean>, description: string, timeoutMs = 150_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A group with its source topic and tiers, a `lanes()` handler that fails each record the number of times `failures`
 * says (by value), and the mappings of its source function and of its durable retry function.
 */
async function service(tiers: readonly string[], failures: ReadonlyMap<string, number>) {
  const group = uniqueName('kl-suspended');
  const source = `${group}.orders`;
  const own = [source, ...tiers.map((tier) => retryTopic(group, tier)), deadLetterTopic(group)];
  topics.push(...own);
  await Promise.all(own.map((topic) => createTopic(topic, 1)));
  const runs: Run[] = [];
  const handler = lanes({ group, redis: { url: REDIS_URL }, kafka: { brokers: KAFKA_BROKERS }, value: 'string', retry: { tiers: [...tiers], maxAttempts: 4 } }, async (record, ctx) => {
    const failing = ctx.attempt <= (failures.get(record.value ?? '') ?? 0);
    runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt, at: Date.now(), dueAt: readHandOffHeaders(record.headers).dueAtMs, outcome: failing ? 'failed' : 'succeeded' });
    if (failing) throw new Error(`${record.value} fails attempt ${ctx.attempt}`);
  });
  const spec = (functionKey: string, topic: string, durable: boolean): MappingSpec => ({
    functionKey, topic, groupId: `${topic}-esm`, batchSize: 100, batchingWindowMs: 0, startingPosition: 'TRIM_HORIZON', startingPositionTimestamp: undefined,
    reportBatchItemFailures: true, brokers: KAFKA_BROKERS, eventSource: { source: 'SelfManagedKafka' }, mixPartitions: true, sessionTimeoutMs: 30_000,
    ...(durable ? { durable: { executionTimeoutMs: 900_000 } } : {}),
  });
  const specs = [spec('orders', source, false), ...tiers.map((tier) => spec('ordersRetry', retryTopic(group, tier), true))];
  const fn = lanesFunction(handler as unknown as (event: never, context: Context) => Promise<unknown>, 60_000);
  const notices: string[] = [];
  const start = async (): Promise<OfflineKafkaTrigger> => {
    const trigger = new OfflineKafkaTrigger(inProcessLambda({ orders: fn, ordersRetry: fn }), {
      specs,
      committers: [],
      custom: {},
      log: { notice: (m) => notices.push(m), warning: (m) => notices.push(m) },
    });
    await trigger.start();
    return trigger;
  };
  /** Every mapping's group committed at its topic's end: nothing of any batch is left to run. */
  const allCommitted = async (): Promise<boolean> => {
    for (const { topic, groupId } of specs) {
      const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
      if (Number(committed?.partitions[0]?.offset ?? -1) !== Number(ends[0]?.high ?? 0)) return false;
    }
    return true;
  };
  return { group, source, runs, handler, start, notices, allCommitted };
}

/** Each key's records in the order they first succeeded. */
function successOrder(runs: readonly Run[]): Map<string, number[]> {
  const order = new Map<string, number[]>();
  for (const run of runs) if (run.outcome === 'succeeded') order.set(run.key, [...(order.get(run.key) ?? []), run.offset]);
  return order;
}

describe('retries waiting suspended under the offline trigger', () => {
  it('runs each key in offset order across the tiers, no retry before its due time, every record once to success', async () => {
    // Prepare: a1 fails twice (tiers 1s then 2s), b1 once; their followers park behind them; c runs straight through.
    const s = await service(['1s', '2s'], new Map([['a1', 2], ['b1', 1]]));
    const trigger = await s.start();
    try {
      // Act
      await produce(s.source, ['a1', 'b1', 'c1', 'a2', 'b2', 'c2', 'a3'].map((value) => ({ key: value[0]!, value })));
      await waitFor(() => s.runs.filter((run) => run.outcome === 'succeeded').length === 7, 'every record to succeed');
      await waitFor(s.allCommitted, 'every batch to be committed');

      // Assess
      expect(Object.fromEntries(successOrder(s.runs))).toEqual({ a: [0, 3, 6], b: [1, 4], c: [2, 5] });
      const retried = s.runs.filter((run) => run.dueAt !== undefined);
      expect(retried.map((run) => `${run.key}${run.offset} attempt ${run.attempt}`).sort()).toEqual(['a0 attempt 2', 'a0 attempt 3', 'b1 attempt 2']);
      for (const run of retried) expect(run.at).toBeGreaterThanOrEqual(run.dueAt!);
      // The copies waited in durable executions, not in the invocations that ran them.
      expect(trigger.stats.functions['ordersRetry']?.executions).toBeGreaterThanOrEqual(3);
      expect(s.notices.filter((notice) => notice.includes('REPORT DurableExecution'))).not.toEqual([]);
    } finally {
      await trigger.stop();
      await s.handler.close();
    }
  });

  it('loses nothing and runs nothing early when stopped while copies wait: the batch is left, a new trigger runs it when due', async () => {
    // Prepare: x1 fails once, its copy waits 30 s in its tier; x2 parks behind it.
    const s = await service(['30s'], new Map([['x1', 1]]));
    const first = await s.start();
    await produce(s.source, [{ key: 'x', value: 'x1' }, { key: 'x', value: 'x2' }]);
    await waitFor(() => (first.stats.functions['ordersRetry']?.invocations ?? 0) > 0, 'the retry function to leave the copy waiting');

    // Act: stop the trigger (Ctrl-C) while the copy waits.
    await first.stop();

    // Assess: the copy did not run, its batch is uncommitted, and the stop said what it left.
    expect(s.runs.map((run) => `${run.offset} attempt ${run.attempt} ${run.outcome}`)).toEqual(['0 attempt 1 failed']);
    expect(s.notices).toContainEqual(expect.stringMatching(/ordersRetry: 1 copy waiting in .*\.retry\.30s-0 left uncommitted: they run when the trigger starts again/));
    expect(await s.allCommitted()).toBe(false);

    // Act: start again.
    const second = await s.start();
    try {
      await waitFor(() => s.runs.filter((run) => run.outcome === 'succeeded').length === 2, 'both records to succeed');
      await waitFor(s.allCommitted, 'every batch to be committed');
    } finally {
      await second.stop();
      await s.handler.close();
    }

    // Assess: the copy ran once, not before its due time, and x2 after it.
    const retry = s.runs.find((run) => run.attempt === 2)!;
    expect(retry.at).toBeGreaterThanOrEqual(retry.dueAt!);
    expect(s.runs.map((run) => `${run.offset} attempt ${run.attempt} ${run.outcome}`)).toEqual(['0 attempt 1 failed', '0 attempt 2 succeeded', '1 attempt 1 succeeded']);
  });
});
