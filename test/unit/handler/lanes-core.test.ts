/**
 * `LanesCore`'s routing, on the in-memory completion model and a recording hand-off writer (no Redis, no Kafka): an
 * event of the group's source topics runs the source record path, an event of its retry tiers the retry copy path,
 * and an event that mixes both (only an emulator would send one) runs both halves and answers for both.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { RecordHandler } from '../../../src/engine/types';
import { encodeKafkaEvent, type KafkaRecordInput } from '../../../src/event';
import { LanesCore } from '../../../src/handler/lanes-core';
import type { HandOffItem, HandOffSink } from '../../../src/ports/handoff';
import { resolveOptions } from '../../../src/options';
import { CompletionModelStore } from '../../../src/testing/completion-model';
import { copyRecord } from '../../../src/testing/retry-copies';
import { DroppedMetrics } from '../../../src/testing/recorders';

const GROUP = 'orders-svc';
const T0 = 1_750_000_000_000;
const ref = (topic: string, partition = 0) => ({ group: GROUP, topic, partition });

interface Rig {
  readonly core: LanesCore;
  readonly store: CompletionModelStore;
  /** Each run of the handler: `<topic>@<offset> attempt <n>`. */
  readonly runs: string[];
  /** What the hand-off writer was given, in order. */
  readonly written: HandOffItem[];
  /** The bootstrap servers each event asked a writer for. */
  readonly writersFor: Array<readonly string[]>;
  /** Offsets whose handler throws on its first attempt. */
  readonly failOnce: Set<number>;
  /** The engine's clock (epoch ms); the retry copies' 1 s backoff is due at `T0 + 1_000`. */
  readonly clock: { ms: number };
}

function rig(maxWindow?: number): Rig {
  const options = resolveOptions({ group: GROUP, retry: { tiers: ['1s', '1m'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 1_000 } } }, {});
  const store = new CompletionModelStore(maxWindow);
  const runs: string[] = [];
  const written: HandOffItem[] = [];
  const writersFor: Array<readonly string[]> = [];
  const failOnce = new Set<number>();
  const clock = { ms: T0 };
  const handler: RecordHandler = (record, ctx) => {
    runs.push(`${record.origin.topic}@${record.origin.offset} attempt ${ctx.attempt}`);
    if (ctx.attempt === 1 && failOnce.has(record.origin.offset)) throw new Error('payments down');
  };
  const sink: HandOffSink = {
    write: async (items) => {
      written.push(...items);
      return items.map(() => ({ status: 'written' as const }));
    },
  };
  const core = new LanesCore({
    options,
    handler,
    store,
    handOff: (servers) => {
      writersFor.push(servers);
      return sink;
    },
    telemetry: { logger: new Logger({ logLevel: 'SILENT' }), metrics: new DroppedMetrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes' }) },
    now: () => clock.ms,
  });
  return { core, store, runs, written, writersFor, failOnce, clock };
}

const context = { getRemainingTimeInMillis: () => 60_000 };

const sourceRecord = (offset: number, key = 'c-1', topic = 'orders'): KafkaRecordInput => ({
  topic, partition: 0, offset, timestamp: T0, key: Buffer.from(key), value: Buffer.from(JSON.stringify({ n: offset })), headers: [],
});

const eventOf = (records: readonly KafkaRecordInput[], bootstrapServers: readonly string[] = ['b-1:9092']) =>
  encodeKafkaEvent({ source: 'SelfManagedKafka', records, bootstrapServers });

/** The retry copy the source path wrote for a failed record, read back from its tier at `offset`. */
function retryCopyOf(r: Rig, origin: number, offset = 0): KafkaRecordInput {
  const item = r.written.find((w) => w.kind === 'retry' && w.origin.offset === origin);
  if (item === undefined) throw new Error(`no retry copy of offset ${origin} was written`);
  return copyRecord(item, offset, T0);
}

describe('LanesCore: which path an event runs', () => {
  it("runs an event of a source topic on the source path: each record once, at attempt 1, its done bit set", async () => {
    const r = rig();
    const response = await r.core.process(eventOf([sourceRecord(0), sourceRecord(1, 'c-2')]), context);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(r.runs).toEqual(['orders@0 attempt 1', 'orders@1 attempt 1']);
    expect(r.written).toEqual([]);
    expect(r.store.partition(ref('orders')).model.frontier()).toBe(2);
  });

  it("runs an event of one of the group's retry tiers on the retry path: the copy runs its origin's record at its attempt", async () => {
    const r = rig();
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);
    expect(r.written).toEqual([expect.objectContaining({ kind: 'retry', topic: `${GROUP}.retry.1s`, attempt: 2, dueAtMs: T0 + 1_000 })]);

    r.clock.ms = T0 + 1_000;

    const response = await r.core.process(eventOf([retryCopyOf(r, 0)]), context);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(r.runs).toEqual(['orders@0 attempt 1', 'orders@0 attempt 2']);
    // The lane's head succeeded: the lane is free again, and the copy's own offset in its tier is done.
    expect(r.store.partition(ref('orders')).lanes.size).toBe(0);
    expect(r.store.partition(ref(`${GROUP}.retry.1s`)).model.frontier()).toBe(1);
  });

  it("treats another group's retry tier as a source topic: the tier's name is the group's own", async () => {
    const r = rig();
    await r.core.process(eventOf([sourceRecord(0, 'c-1', 'billing.retry.1s')]), context);
    expect(r.runs).toEqual(['billing.retry.1s@0 attempt 1']);
    expect(r.store.partition(ref('billing.retry.1s')).model.frontier()).toBe(1);
  });

  it('runs both halves of an event that mixes source records and retry copies, and answers for both', async () => {
    const r = rig();
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);

    r.clock.ms = T0 + 1_000;
    const response = await r.core.process(eventOf([retryCopyOf(r, 0), sourceRecord(1, 'c-2')]), context);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(r.runs.slice(1).sort()).toEqual(['orders@0 attempt 2', 'orders@1 attempt 1']);
    expect(r.store.partition(ref('orders')).model.frontier()).toBe(2);
  });

  it('answers a mixed event with the records either half could not take, for redelivery', async () => {
    // A window of 2 offsets per partition: the source half refuses its third record (back-pressure).
    const r = rig(2);
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);

    r.clock.ms = T0 + 1_000;
    const response = await r.core.process(eventOf([retryCopyOf(r, 0), sourceRecord(1, 'c-2'), sourceRecord(2, 'c-3'), sourceRecord(3, 'c-4')]), context);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: { partition: 'orders-0', offset: 3 } }]);
    expect(r.runs).toContain('orders@0 attempt 2');
    expect(r.runs).not.toContain('orders@3 attempt 1');
  });

  it("asks for the hand-off writer of the event's brokers, once per event", async () => {
    const r = rig();
    await r.core.process(eventOf([sourceRecord(0)], ['b-1:9092', 'b-2:9092']), context);
    await r.core.process(eventOf([sourceRecord(1)], ['b-3:9092']), context);
    expect(r.writersFor).toEqual([['b-1:9092', 'b-2:9092'], ['b-3:9092']]);
  });

  it('throws for an event that is not a Kafka event, running nothing', async () => {
    const r = rig();
    await expect(r.core.process({ eventSource: 'aws:sqs', Records: [] }, context)).rejects.toThrow();
    expect(r.runs).toEqual([]);
  });
});

describe('LanesCore.round: a round of a durable execution', () => {
  const execution = { startedAtMs: T0, timeoutMs: 900_000 };
  const laneEntry = (r: Rig) => [...r.store.partition(ref('orders')).lanes.values()].map((head) => ({ ...head }));

  it('leaves a copy not due waiting (not run, not done, nothing written, its lane as it was); a later round runs it when due', async () => {
    // Prepare: record 0 fails, its copy is due at T0 + 1 s.
    const r = rig();
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);
    const copy = retryCopyOf(r, 0);
    const lane = laneEntry(r);

    // Act: the first round, at T0.
    const first = await r.core.round(eventOf([copy]), context, execution);

    // Assess: the copy waits for a later round, due at T0 + 1 s; its lane and its tier are as they were.
    expect(first).toEqual({ response: { batchItemFailures: [] }, waiting: { copies: 1, nextDueAtMs: T0 + 1_000 }, startedAtMs: T0, endedAtMs: T0 });
    expect(r.runs).toEqual(['orders@0 attempt 1']);
    expect(r.written).toHaveLength(1);
    expect(laneEntry(r)).toEqual(lane);
    expect(r.store.partition(ref(`${GROUP}.retry.1s`)).model.frontier()).toBe(0);

    // Act: the next round of the same event, once the copy is due: admitted again (its done bit is clear), it runs.
    r.clock.ms = T0 + 1_000;
    const second = await r.core.round(eventOf([copy]), context, execution);

    expect(second).toEqual({ response: { batchItemFailures: [] }, startedAtMs: T0, endedAtMs: T0 + 1_000 });
    expect(r.runs).toEqual(['orders@0 attempt 1', 'orders@0 attempt 2']);
    expect(r.store.partition(ref(`${GROUP}.retry.1s`)).model.frontier()).toBe(1);
  });

  it('holds a copy due later than the execution may wait until that point, then sends it back to its tier unchanged', async () => {
    // Prepare: record 0's copy as the 1m tier holds one due in 2 minutes (a `RetryLaterError`'s delay). The execution
    // may hold a 1m tier's batch for the longer of its delay and a round's time: 60 s.
    const r = rig();
    const core = r.core;
    r.failOnce.add(0);
    await core.process(eventOf([sourceRecord(0)]), context);
    const original = r.written[0]!;
    const late = { ...original, topic: `${GROUP}.retry.1m`, dueAtMs: T0 + 120_000 };
    r.written.length = 0;

    const first = await core.round(eventOf([copyRecord(late, 0, T0)]), context, execution);
    expect(first.waiting).toEqual({ copies: 1, nextDueAtMs: T0 + 60_000 });
    expect(r.written).toEqual([]);

    r.clock.ms = T0 + 60_000;
    const second = await core.round(eventOf([copyRecord(late, 0, T0)]), context, execution);

    expect(second.waiting).toBeUndefined();
    expect(r.written).toEqual([expect.objectContaining({ topic: `${GROUP}.retry.1m`, attempt: 2, dueAtMs: T0 + 120_000 })]);
    expect(r.runs).toEqual(['orders@0 attempt 1']);
    expect(r.store.partition(ref(`${GROUP}.retry.1m`)).model.frontier()).toBe(1);
  });

  it('drops a stale copy at once, without leaving it waiting', async () => {
    const r = rig();
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);
    const stale = { ...r.written[0]!, attempt: 1 };

    const outcome = await r.core.round(eventOf([copyRecord(stale, 0, T0)]), context, execution);

    expect(outcome.waiting).toBeUndefined();
    expect(r.runs).toEqual(['orders@0 attempt 1']);
    expect(r.store.partition(ref(`${GROUP}.retry.1s`)).model.frontier()).toBe(1);
  });

  it("reads the execution's start in its first round, when not given", async () => {
    const r = rig();
    r.clock.ms = T0 + 5;
    const outcome = await r.core.round(eventOf([sourceRecord(0)]), context, { timeoutMs: 900_000 });
    expect(outcome).toEqual({ response: { batchItemFailures: [] }, startedAtMs: T0 + 5, endedAtMs: T0 + 5 });
  });
});

describe('LanesCore.round: a topic named like a tier that is none', () => {
  it('dead-letters its copies as malformed, as a plain invocation does', async () => {
    const r = rig();
    r.failOnce.add(0);
    await r.core.process(eventOf([sourceRecord(0)]), context);
    const stray = { ...r.written[0]!, topic: `${GROUP}.retry.soon` };

    const outcome = await r.core.round(eventOf([copyRecord(stray, 0, T0)]), context, { startedAtMs: T0, timeoutMs: 900_000 });

    expect(outcome.response).toEqual({ batchItemFailures: [] });
    expect(r.written.at(-1)).toEqual(expect.objectContaining({ kind: 'dead-letter', reason: 'malformed' }));
  });
});
