import { Logger } from '@aws-lambda-powertools/logger';
import { pathParts } from '../../../src/engine/run-scope';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Engine, type InvocationContext } from '../../../src/engine/engine';
import type { Clock } from '../../../src/ports/clock';
import type { HandOffSink, HandOffItem, HandOffOutcome } from '../../../src/ports/handoff';
import { NonRetriableError, RetryLaterError } from '../../../src/errors';
import type { LanesRecord, RecordHandler } from '../../../src/engine/types';
import { decodeKafkaEvent, encodeKafkaEvent, type KafkaBatchResponse, type KafkaRecordInput } from '../../../src/event';
import { handOffMessage, readHandOffHeaders } from '../../../src/handoff/headers';
import { copyRecord } from '../../../src/testing/retry-copies';
import { resolveOptions, type LanesOptionsInput } from '../../../src/options';
import { SourcePath } from '../../../src/source/source-path';
import { RetryPath } from '../../../src/retry/retry-path';
import { CompletionModelStore } from '../../../src/testing/completion-model';

const GROUP = 'grp';
const SOURCE = 'orders';
const lane = (key: string): string => Buffer.from(key).toString('base64');

/** A sink that acknowledges every copy (or refuses those `refuse` picks) and keeps what it was given. */
class RecordingSink implements HandOffSink {
  readonly items: HandOffItem[] = [];
  refuse: (item: HandOffItem) => boolean = () => false;

  async write(items: readonly HandOffItem[]): Promise<HandOffOutcome[]> {
    this.items.push(...items);
    return items.map((item) => (this.refuse(item)
      ? { status: 'refused', reason: 'too-large', error: { name: 'KafkaJSProtocolError', message: 'MESSAGE_TOO_LARGE' } }
      : { status: 'written' }));
  }

  /** Takes the retry copies written so far, leaving the dead letters. */
  take(): HandOffItem[] {
    const retries = this.items.filter((item) => item.kind === 'retry');
    this.items.splice(0, this.items.length, ...this.items.filter((item) => item.kind !== 'retry'));
    return retries;
  }
}

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const silent = { logger: new Logger({ logLevel: 'SILENT' }), metrics: new Metrics({ namespace: 'test', serviceName: 'test' }) };

function within(ms: number): InvocationContext {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}

interface Rig {
  engine: Engine;
  store: CompletionModelStore;
  sink: RecordingSink;
  runs: Array<{ key: string; offset: number; attempt: number }>;
  /** Delivers source records (a processor batch). */
  deliver(records: KafkaRecordInput[], remainingMs?: number): Promise<unknown>;
  /** Delivers retry copies, each at its own offset of its tier's partition 0. */
  redeliver(items: readonly HandOffItem[], remainingMs?: number): Promise<unknown>;
}

function rig(input: Partial<LanesOptionsInput>, handler: (record: LanesRecord, attempt: number) => unknown, clock?: Clock): Rig {
  const options = resolveOptions({
    group: GROUP,
    flushIntervalMs: 10,
    deadlineMarginMs: 1_000,
    retry: { tiers: ['1s', '1m'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 30 } },
    ...input,
  } as LanesOptionsInput, {});
  const store = new CompletionModelStore();
  const sink = new RecordingSink();
  const runs: Rig['runs'] = [];
  const wrapped: RecordHandler = (record, ctx) => {
    runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt });
    return handler(record, ctx.attempt);
  };
  const engine = new Engine({ options, handler: wrapped, store, telemetry: silent, ...(clock === undefined ? {} : { clock }) });
  const paths = pathParts(options, silent.logger, clock === undefined ? undefined : () => clock.now());
  const retryOffsets = new Map<string, number>();
  return {
    engine, store, sink, runs,
    deliver: (records, remainingMs = 30_000) => {
      const decoded = decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
      return engine.run(new SourcePath(paths), decoded.partitions, sink, within(remainingMs));
    },
    redeliver: (items, remainingMs = 30_000) => {
      const records = items.map((item) => {
        const offset = retryOffsets.get(item.topic) ?? 0;
        retryOffsets.set(item.topic, offset + 1);
        return copyRecord(item, offset);
      });
      const decoded = decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
      return engine.run(new RetryPath(paths), decoded.partitions, sink, within(remainingMs));
    },
  };
}

function source(offset: number, key: string): KafkaRecordInput {
  return { topic: SOURCE, partition: 0, offset, timestamp: Date.now(), key: Buffer.from(key), value: Buffer.from(JSON.stringify({ offset })) };
}

const ref = { group: GROUP, topic: SOURCE, partition: 0 };

/** Delivers every retry copy written until none is left; returns how many rounds it took. */
async function drainRetries(r: Rig, maxRounds = 20): Promise<number> {
  let rounds = 0;
  for (let items = r.sink.take(); items.length > 0; items = r.sink.take()) {
    rounds += 1;
    if (rounds > maxRounds) throw new Error('retries never settle');
    await r.redeliver(items);
  }
  return rounds;
}

describe('engine: processor and retry function on the in-memory completion model', () => {
  it('runs a head that fails twice, then its parked successors in order; other keys never wait', async () => {
    // Prepare: key A fails on its first two attempts; B always succeeds.
    const failures = new Map<number, number>([[0, 2]]);
    const r = rig({}, (record) => {
      const left = failures.get(record.origin.offset) ?? 0;
      if (left > 0) {
        failures.set(record.origin.offset, left - 1);
        throw new Error('flaky');
      }
    });

    // Act: A@0 fails and blocks its lane; A's later records arrive in later batches and are parked.
    await r.deliver([source(0, 'A'), source(1, 'B')]);
    await r.deliver([source(2, 'A'), source(3, 'B'), source(4, 'A')]);
    await r.deliver([source(5, 'A'), source(6, 'A')]);
    const beforeRetries = r.runs.map((run) => `${run.key}@${run.offset}`);
    await drainRetries(r);

    // Assess
    expect(beforeRetries).toEqual(['A@0', 'B@1', 'B@3']);
    const aRuns = r.runs.filter((run) => run.key === 'A').map((run) => [run.offset, run.attempt]);
    expect(aRuns).toEqual([[0, 1], [0, 2], [0, 3], [2, 1], [4, 1], [5, 1], [6, 1]]);
    expect(r.store.partition(ref).lanes.size).toBe(0);
    expect(r.store.partition(ref).model.frontier()).toBe(7);
  });

  it('never runs a retry before its due time', async () => {
    const dueTimes: Array<{ ranAt: number; dueAt: number }> = [];
    let first = true;
    const r = rig({ retry: { tiers: ['1s'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 120 } } }, (record) => {
      const due = readHandOffHeaders(record.headers).dueAtMs;
      if (due !== undefined) dueTimes.push({ ranAt: Date.now(), dueAt: due });
      if (first) {
        first = false;
        throw new Error('once');
      }
    });
    await r.deliver([source(0, 'A')]);
    await drainRetries(r);
    expect(dueTimes).toHaveLength(1);
    expect(dueTimes[0]!.ranAt).toBeGreaterThanOrEqual(dueTimes[0]!.dueAt);
  });

  it('runs a due copy of another lane while a copy before it waits for its due time, with one record at a time', async () => {
    // Prepare: A's copy due in a minute, B's in 50 ms, both in the 1s tier, A's first
    let writtenBackBeforeB: number | undefined;
    const r: Rig = rig({ concurrency: 1, retry: { tiers: ['1s'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 50 } } }, (record, attempt) => {
      if (attempt === 1) throw record.origin.offset === 0 ? new RetryLaterError(60_000) : new Error('once');
      writtenBackBeforeB = r.sink.items.length;
    });
    await r.deliver([source(0, 'A'), source(1, 'B')]);
    const copies = r.sink.take();
    expect(copies.map((c) => c.origin.offset)).toEqual([0, 1]);

    // Act: an invocation that can wait 1 s, not a minute
    await r.redeliver(copies, 2_000);

    // Assess: B ran in the slot A's wait gave back, before A went back to its tier unchanged
    expect(r.runs.filter((run) => run.attempt === 2)).toEqual([{ key: 'B', offset: 1, attempt: 2 }]);
    expect(writtenBackBeforeB).toBe(0);
    expect(r.sink.take()).toEqual([expect.objectContaining({ origin: expect.objectContaining({ offset: 0 }), attempt: 2, dueAtMs: copies[0]!.dueAtMs })]);
  });

  it('writes a copy due after the invocation can wait back to its tier unchanged, and reports it done', async () => {
    const r = rig({ retry: { tiers: ['1s', '1m'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 60_000 } } }, () => {
      throw new Error('always');
    });
    await r.deliver([source(0, 'A')]);
    const [copy] = r.sink.take();
    expect(copy?.topic).toBe(`${GROUP}.retry.1m`);

    await r.redeliver([copy!], 3_000);

    const [back] = r.sink.take();
    expect(back).toMatchObject({ topic: `${GROUP}.retry.1m`, attempt: 2, dueAtMs: copy!.dueAtMs });
    expect(r.runs).toHaveLength(1);
    expect(r.store.partition({ group: GROUP, topic: `${GROUP}.retry.1m`, partition: 0 }).model.frontier()).toBe(1);
  });

  it('drops a duplicated or stale copy: the same copy delivered twice runs once', async () => {
    let fail = true;
    const r = rig({}, () => {
      if (fail) {
        fail = false;
        throw new Error('once');
      }
    });
    await r.deliver([source(0, 'A')]);
    const [copy] = r.sink.take();

    await r.redeliver([copy!, copy!]);
    await r.redeliver([copy!]);

    expect(r.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(r.store.partition(ref).lanes.size).toBe(0);
  });

  it('dead-letters when attempts run out, then releases the lane (release) or holds it (hold)', async () => {
    for (const policy of ['release', 'hold'] as const) {
      const r = rig({ deadLetter: { policy } }, (record) => {
        if (record.origin.offset === 0) throw new Error('always');
      });
      await r.deliver([source(0, 'A'), source(1, 'A')]);
      await drainRetries(r);
      const dead = r.sink.items.filter((i) => i.kind === 'dead-letter');
      expect(dead.map((d) => [d.origin.offset, d.reason])).toEqual([[0, 'attempts-exhausted']]);
      const runsOf1 = r.runs.filter((run) => run.offset === 1).length;
      if (policy === 'release') {
        expect(runsOf1).toBe(1);
        expect(r.store.partition(ref).lanes.size).toBe(0);
      } else {
        expect(runsOf1).toBe(0);
        expect(r.store.partition(ref).lanes.get(lane('A'))).toMatchObject({ offset: 0, state: 'held', reason: 'attempts-exhausted' });
      }
    }
  });

  it('under hold, holds no lane while its dead letter is not written: the head and its follower go back to the event source', async () => {
    const r = rig({ deadLetter: { policy: 'hold' } }, (record) => {
      if (record.origin.offset === 0) throw new NonRetriableError('fatal');
    });
    const write = r.sink.write.bind(r.sink);
    r.sink.write = async (items) => {
      if (items.some((item) => item.kind === 'dead-letter')) throw new Error('dead-letter topic out of reach');
      return write(items);
    };

    const response = (await r.deliver([source(0, 'A'), source(1, 'A'), source(2, 'B')])) as KafkaBatchResponse;

    // `kafka-lanes lane release` trusts a held head to be in the dead-letter topic: no lane may be held here.
    expect(r.store.partition(ref).lanes.size).toBe(0);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier.offset)).toContain(0);
    expect(r.runs.map((run) => run.offset)).toEqual([0, 2]);
    expect(r.store.partition(ref).model.frontier()).toBe(0);
  });

  it('a parked successor that fails becomes the head, and a retry of a retry never overtakes it', async () => {
    const fails = new Map<number, number>([[0, 1], [1, 1]]);
    const r = rig({}, (record) => {
      const left = fails.get(record.origin.offset) ?? 0;
      if (left > 0) {
        fails.set(record.origin.offset, left - 1);
        throw new Error('flaky');
      }
    });
    await r.deliver([source(0, 'A'), source(1, 'A'), source(2, 'A')]);
    await drainRetries(r);
    expect(r.runs.map((run) => [run.offset, run.attempt])).toEqual([[0, 1], [0, 2], [1, 1], [1, 2], [2, 1]]);
    expect(r.store.partition(ref).model.frontier()).toBe(3);
  });

  it('retries in unordered mode without lanes: a failure goes to the next tier, successors run at once', async () => {
    let fail = true;
    const r = rig({ ordering: 'unordered' }, (record) => {
      if (record.origin.offset === 0 && fail) {
        fail = false;
        throw new Error('once');
      }
    });
    await r.deliver([source(0, 'A'), source(1, 'A')]);
    expect(r.runs.map((run) => run.offset)).toEqual([0, 1]);
    await drainRetries(r);
    expect(r.runs.map((run) => [run.offset, run.attempt])).toEqual([[0, 1], [1, 1], [0, 2]]);
    expect(r.store.calls).not.toContain('laneHead');
  });

  it('runs a copy whose timer woke before its due time by the invocation clock, instead of writing it back', async () => {
    // A clock that runs at 90% of real time: a timer set for the wait to the due time fires when this clock
    // still shows the copy as not due, as a Node timer firing a millisecond early by Date.now() does.
    const start = Date.now();
    const slow: Clock = { now: () => start + Math.floor((Date.now() - start) * 0.9) };
    let fail = true;
    const r = rig({}, () => {
      if (fail) {
        fail = false;
        throw new Error('once');
      }
    }, slow);
    await r.deliver([source(0, 'A')]);
    const [copy] = r.sink.take();

    await r.redeliver([copy!]);

    expect(r.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(r.sink.items.filter((item) => item.kind === 'retry')).toEqual([]);
  });

  it('dead-letters a malformed retry copy with the reason and runs the rest of its batch', async () => {
    let fail = true;
    const r = rig({}, () => {
      if (fail) {
        fail = false;
        throw new Error('once');
      }
    });
    await r.deliver([source(0, 'A')]);
    const [copy] = r.sink.take();
    const garbled: HandOffItem = { ...copy!, topic: `${GROUP}.retry.7s` };

    await r.redeliver([garbled, copy!]);

    const dead = r.sink.items.filter((i) => i.kind === 'dead-letter');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ reason: 'malformed' });
    expect(dead[0]!.error?.message).toMatch(/unknown retry tier `7s`/);
    expect(r.runs.map((run) => run.attempt)).toEqual([1, 2]);
  });

  it('dead-letters a copy the broker refuses for good, and applies the dead-letter policy to its lane', async () => {
    const r2 = rig({}, (record) => {
      if (record.origin.offset === 0) throw new Error('retry me');
    });
    r2.sink.refuse = (item) => item.kind === 'retry';

    await r2.deliver([source(0, 'A'), source(1, 'A')]);

    // The retry copy of 0 was refused: 0 is dead-lettered and the lane released onto 1, handed to the first tier
    // (refused too, so it is dead-lettered in turn and the lane is free).
    expect(r2.store.partition(ref).lanes.size).toBe(0);
    expect(r2.store.partition(ref).model.frontier()).toBe(2);
    expect(r2.sink.items.map((i) => [i.kind, i.origin.offset])).toEqual([['retry', 0], ['retry', 1]]);
  });

  it('hands the lane being drained to the first tier as due now when the deadline comes', async () => {
    const r = rig({ deadlineMarginMs: 1_000 }, async (record, attempt) => {
      if (record.origin.offset !== 0) return;
      if (attempt === 1) throw new Error('once');
      // The retry of 0 takes the invocation past the point where records may start.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    });
    await r.deliver([source(0, 'A'), source(1, 'A'), source(2, 'A')]);
    const [copy] = r.sink.take();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, copy!.dueAtMs - Date.now())));

    // Act: 0 succeeds late, so 1 becomes the head when nothing may start any more.
    await r.redeliver([copy!], 2_200);

    // Assess: 1 went to the first tier due now, attempt unchanged, its lease taken off once written.
    const handedOff = r.sink.take();
    expect(handedOff.map((i) => [i.topic, i.origin.offset, i.attempt, i.deferred])).toEqual([[`${GROUP}.retry.1s`, 1, 1, true]]);
    expect(r.store.partition(ref).lanes.get(lane('A'))).toMatchObject({ offset: 1, attempt: 1, leaseUntilMs: 0 });
    await r.redeliver(handedOff);
    expect(r.runs.map((run) => [run.offset, run.attempt])).toEqual([[0, 1], [0, 2], [1, 1], [2, 1]]);
    expect(r.store.partition(ref).lanes.size).toBe(0);
  });

  it('hands a deferred head off again as deferred when it is redelivered before its done bit was recorded', async () => {
    // Prepare: every record is deferred (the invocation starts past its margin), and the done bit of the
    // deferred head is lost (Redis paused), so the event source delivers the batch again.
    const r = rig({}, () => undefined);
    const markDone = r.store.markDone.bind(r.store);
    let lose = true;
    r.store.markDone = async (ref, offsets) => (lose ? Promise.reject(new Error('Redis paused')) : markDone(ref, offsets));
    const first = await r.deliver([source(0, 'A'), source(1, 'A')], 500);
    const [deferred] = r.sink.take();
    lose = false;

    // Act
    await r.deliver([source(0, 'A'), source(1, 'A')]);

    // Assess: the same copy as the first time: deferred, attempt unchanged, with its lane.
    const [again] = r.sink.take();
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: `${SOURCE}-0`, offset: 0 } }] });
    for (const copy of [deferred, again]) {
      expect(readHandOffHeaders(handOffMessage(copy!).headers ?? {})).toMatchObject({ kind: 'retry', attempt: 1, deferred: true, lane: lane('A'), originOffset: 0 });
    }
    expect(r.runs).toEqual([]);
  });

  it('logs an error when a batch arrives wholly below base while highest is far above it (topic re-created)', async () => {
    // Prepare: Redis remembers a partition far ahead of what the re-created topic delivers.
    const store = new CompletionModelStore();
    const admit = store.admit.bind(store);
    store.admit = async (ref, records) => ({
      ...(await admit(ref, records)),
      statuses: records.map(() => 'duplicate' as const),
      window: { base: 50_000, highest: 90_000, frontier: 90_001 },
    });
    const logger = new Logger({ logLevel: 'SILENT' });
    const errors = jest.spyOn(logger, 'error');
    const options = resolveOptions({ group: GROUP, retry: { tiers: ['1s'] } } as LanesOptionsInput, {});
    const engine = new Engine({ options, handler: () => undefined, store, telemetry: { ...silent, logger } });
    const decoded = decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records: [source(0, 'A'), source(1, 'B')] }));

    // Act
    await engine.run(new SourcePath(pathParts(options, logger)), decoded.partitions, new RecordingSink(), within(10_000));

    // Assess
    expect(errors).toHaveBeenCalledWith(expect.stringMatching(/created again/), expect.objectContaining({ base: 50_000, highest: 90_000 }));
  });
});
