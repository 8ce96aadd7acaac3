/**
 * kafka-lanes/testing: a handler made by `lanes()` runs on its own engine over the in-memory models, and the test sees
 * what a deployed function would have done (runs, retries, dead letters, held lanes, steps, outputs), with the retry
 * tiers' delays simulated.
 */
import { z } from 'zod';
import { avro, lanes, NonRetriableError, protobuf, RetryLaterError } from '../../../src';
import { testLanes } from '../../../src/testing';

const order = z.object({ id: z.string(), amount: z.number() });

describe('testLanes', () => {
  it('runs every record once, per key in offset order, and reports the order kept', async () => {
    // Prepare
    const handler = lanes({ group: 'orders-svc', value: order }, async (record) => {
      await new Promise((resolve) => setImmediate(resolve));
      return record.value.id;
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([
      { key: 'a', value: { id: 'a1', amount: 1 } },
      { key: 'b', value: { id: 'b1', amount: 1 } },
      { key: 'a', value: { id: 'a2', amount: 1 } },
      { key: 'b', value: { id: 'b2', amount: 1 }, partition: 1 },
      { key: 'a', value: { id: 'a3', amount: 1 } },
    ]);

    // Assess
    expect(t.runs.map((run) => [run.key, run.partition, run.offset, run.value.id, run.status])).toEqual(expect.arrayContaining([
      ['a', 0, 0, 'a1', 'succeeded'], ['b', 0, 1, 'b1', 'succeeded'], ['a', 0, 2, 'a2', 'succeeded'], ['a', 0, 3, 'a3', 'succeeded'], ['b', 1, 0, 'b2', 'succeeded'],
    ]));
    expect(t.runs).toHaveLength(5);
    expect(t.order('a')).toEqual([0, 2, 3]);
    expect(t.order('b', { partition: 1 })).toEqual([0]);
    expect(() => t.assertOrder()).not.toThrow();
    expect([t.retries, t.deadLetters, t.pending]).toEqual([[], [], []]);
  });

  it('retries a failing record through the tiers with the delays simulated, the key waiting behind it', async () => {
    // Prepare: the first record of key `a` fails twice (a plain error, then one asking for 10 minutes).
    let failures = 0;
    const handler = lanes({ group: 'orders-svc', value: 'json', retry: { maxAttempts: 5, tiers: ['5s', '1m', '10m'], backoff: { type: 'fixed', delayMs: 5_000 } } }, async (record, ctx) => {
      if (record.origin.offset === 0 && ctx.attempt <= 2) {
        failures += 1;
        throw ctx.attempt === 1 ? new Error('payment service down') : new RetryLaterError(10 * 60_000, 'rate limited');
      }
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([{ key: 'a', value: 1 }, { key: 'a', value: 2 }, { key: 'b', value: 3 }]);

    // Assess
    expect(failures).toBe(2);
    expect(t.runs.map((run) => [run.key, run.offset, run.attempt, run.status])).toEqual([
      ['a', 0, 1, 'failed'], ['b', 2, 1, 'succeeded'], ['a', 0, 2, 'failed'], ['a', 0, 3, 'succeeded'], ['a', 1, 1, 'succeeded'],
    ]);
    expect(t.retries.map((retry) => [retry.topic, retry.attempt, retry.delayMs, retry.error?.message])).toEqual([
      ['orders-svc.retry.5s', 2, 5_000, 'payment service down'],
      ['orders-svc.retry.10m', 3, 10 * 60_000, 'rate limited'],
    ]);
    const [first, , second, third] = t.runs;
    expect([second!.at - first!.at, third!.at - second!.at]).toEqual([5_000, 10 * 60_000]);
    expect(new Set(t.runs.filter((run) => run.offset === 0).map((run) => run.idempotencyKey))).toEqual(new Set(['orders-svc:orders:0:0']));
    expect(t.order('a')).toEqual([0, 0, 0, 1]);
    expect(() => t.assertOrder()).not.toThrow();
    expect(t.deadLetters).toEqual([]);
  });

  it('dead-letters with the reason and the error class: attempts exhausted, non-retriable, a bug, a value the schema refuses', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: order, retry: { maxAttempts: 3 } }, async (record) => {
      if (record.value.id === 'flaky') throw new Error('still down');
      if (record.value.amount <= 0) throw new NonRetriableError('amount must be positive');
      if (record.value.id === 'bug') (undefined as unknown as { x: number }).x.toFixed();
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([
      { key: 'k1', value: { id: 'flaky', amount: 1 } },
      { key: 'k2', value: { id: 'free', amount: 0 } },
      { key: 'k3', value: { id: 'bug', amount: 1 } },
      { key: 'k4', value: { id: 'no amount' } },
      { key: 'k5', value: 'not json at all' },
    ]);

    // Assess
    const letters = [...t.deadLetters].sort((a, b) => a.origin.offset - b.origin.offset);
    expect(letters.map((letter) => [letter.key, letter.reason, letter.error?.name, letter.attempts, letter.topic])).toEqual([
      ['k1', 'attempts-exhausted', 'Error', 3, 'g.dlq'],
      ['k2', 'non-retriable', 'NonRetriableError', 1, 'g.dlq'],
      ['k3', 'programming-error', 'TypeError', 1, 'g.dlq'],
      ['k4', 'schema-validation', 'SchemaValidationError', 1, 'g.dlq'],
      ['k5', 'deserialization', 'DeserializationError', 1, 'g.dlq'],
    ]);
    expect(letters[3]!.value).toEqual({ id: 'no amount' });
    expect(letters[4]!.value).toBe('not json at all');
    expect(t.runs.filter((run) => run.key === 'k1').map((run) => run.attempt)).toEqual([1, 2, 3]);
    expect(t.runs.some((run) => run.key === 'k4' || run.key === 'k5')).toBe(false);
  });

  it('holds a lane on its dead-lettered head under the hold policy, and runs the rest once it is released', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'string', deadLetter: { policy: 'hold' } }, async (record) => {
      if (record.value === 'poison') throw new NonRetriableError('cannot take it');
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([{ key: 'a', value: 'poison' }, { key: 'a', value: 'next' }, { key: 'a', value: 'last' }, { key: 'b', value: 'other' }]);

    // Assess: `a` waits behind its poison record, `b` went on.
    expect(t.order('a')).toEqual([0]);
    expect(t.order('b')).toEqual([3]);
    expect(t.held).toEqual([{ topic: 'orders', partition: 0, key: 'a', lane: Buffer.from('a').toString('base64'), offset: 0, reason: 'non-retriable', parked: 2 }]);

    // Act: the operator's `kafka-lanes lane release`.
    await t.release('a');

    // Assess
    expect(t.order('a')).toEqual([0, 1, 2]);
    expect(t.held).toEqual([]);
    expect(() => t.assertOrder()).not.toThrow();
  });

  it('lets a lane go on past a dead letter under the release policy (the default)', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'string' }, async (record) => {
      if (record.value === 'poison') throw new NonRetriableError('cannot take it');
    });
    const t = testLanes(handler);

    // Act
    await t.run([{ key: 'a', value: 'poison' }, { key: 'a', value: 'next' }]);

    // Assess
    expect(t.order('a', { topic: 'source' })).toEqual([0, 1]);
    expect(t.held).toEqual([]);
    expect(t.deadLetters.map((letter) => letter.origin)).toEqual([{ topic: 'source', partition: 0, offset: 0 }]);
  });

  it('stores step results once: a retry gets the stored result back and does not run the step again', async () => {
    // Prepare
    const charges: string[] = [];
    const handler = lanes({ group: 'shop', value: order, retry: { maxAttempts: 3 } }, async (record, ctx) => {
      const payment = await ctx.step('charge', async () => {
        charges.push(ctx.idempotencyKey);
        return { id: `ch-${record.value.id}` };
      });
      if (ctx.attempt === 1) throw new Error('receipt service down');
      ctx.send('receipts', { key: record.value.id, value: { order: record.value.id, payment: payment.id } });
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run({ key: 'c', value: { id: 'o1', amount: 5 } });

    // Assess
    expect(charges).toEqual(['shop:orders:0:0']);
    expect(t.runs.map((run) => [run.attempt, run.status])).toEqual([[1, 'failed'], [2, 'succeeded']]);
    expect(t.steps).toEqual([{ origin: { topic: 'orders', partition: 0, offset: 0 }, name: 'charge', value: { id: 'ch-o1' } }]);
    expect(t.outputs).toEqual([expect.objectContaining({
      topic: 'receipts', key: 'o1', value: { order: 'o1', payment: 'ch-o1' }, origin: { topic: 'orders', partition: 0, offset: 0 },
    })]);
    expect(t.outputs[0]!.headers).toEqual({ 'lanes-output': 'shop/orders/0/0/0' });
  });

  it('sends no output of a failed run, and fails a record sending to an output topic that is not declared', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'string', retry: { maxAttempts: 2 } }, async (record, ctx) => {
      ctx.send(record.value === 'stray' ? 'elsewhere' : 'out', { value: record.value });
      if (record.value === 'fails') throw new Error('no');
    });
    const t = testLanes(handler, { outputs: ['out'] });

    // Act
    await t.run([{ key: 'a', value: 'ok' }, { key: 'b', value: 'fails' }, { key: 'c', value: 'stray' }]);

    // Assess
    expect(t.outputs.map((output) => [output.topic, output.value])).toEqual([['out', 'ok']]);
    expect(t.deadLetters.map((letter) => [letter.key, letter.reason, letter.error?.name]).sort()).toEqual([
      ['b', 'attempts-exhausted', 'Error'],
      ['c', 'attempts-exhausted', 'OutputsNotSentError'],
    ]);
    expect(t.deadLetters.find((letter) => letter.key === 'c')?.error?.message).toContain('Expected ctx.send to a declared output topic (kafkaLanes.outputs: `out`), got `elsewhere`');
  });

  it('keeps retries pending until their time comes when the clock is moved by hand', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'string', retry: { tiers: ['1m'], backoff: { type: 'fixed', delayMs: 60_000 } } }, async (_record, ctx) => {
      if (ctx.attempt === 1) throw new Error('later');
    });
    const t = testLanes(handler, { now: Date.UTC(2026, 0, 1) });

    // Act
    await t.deliver([{ key: 'a', value: 'x' }]);
    await t.advance(30_000);
    const early = t.runs.length;
    await t.advance(30_000);

    // Assess
    expect(early).toBe(1);
    expect(t.runs.map((run) => run.attempt)).toEqual([1, 2]);
    expect(t.pending).toEqual([]);
    expect(t.runs.map((run) => run.at)).toEqual([Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1) + 60_000]);
  });

  it('runs a partition in order under `ordering: partition`, and refuses to assert an order `unordered` does not promise', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'json', ordering: 'partition' }, async (_record, ctx) => {
      if (ctx.attempt === 1 && _record.origin.offset === 1) throw new Error('once');
    });
    const unordered = lanes({ group: 'g', value: 'json', ordering: 'unordered' }, async () => undefined);
    const t = testLanes(handler);
    const u = testLanes(unordered);

    // Act
    await t.run([{ key: 'a', value: 1 }, { key: 'b', value: 2 }, { key: 'c', value: 3 }]);
    await u.run([{ value: 1 }, { value: 2 }]);

    // Assess
    expect(t.runs.map((run) => [run.offset, run.attempt])).toEqual([[0, 1], [1, 1], [1, 2], [2, 1]]);
    expect(() => t.assertOrder()).not.toThrow();
    expect(u.runs).toHaveLength(2);
    expect(() => u.assertOrder()).toThrow("`ordering: 'unordered'` promises no order to assert");
  });

  it('reports a lane whose runs overlapped: a batch redelivered while its first delivery still runs', async () => {
    // Prepare: the first run waits until the redelivery has started its own.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const handler = lanes({ group: 'g', value: 'json' }, async () => {
      started += 1;
      if (started === 1) await gate;
      else release();
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act: two invocations of one batch at once (Lambda redelivering a batch it thinks timed out).
    await Promise.all([t.deliver({ key: 'a', value: 1, offset: 0 }), t.deliver({ key: 'a', value: 1, offset: 0 })]);

    // Assess
    expect(t.order('a')).toEqual([0, 0]);
    expect(() => t.assertOrder()).toThrow('orders-0 key `a`: offset 0 started while an earlier run of the lane was still running');
  });

  it('gives up settling after `maxRounds` retry invocations, naming a copy still pending', async () => {
    // Prepare
    const handler = lanes({ group: 'g', value: 'json', retry: { maxAttempts: 10 } }, async () => {
      throw new Error('never');
    });
    const t = testLanes(handler, { maxRounds: 3 });

    // Act
    const settled = t.run({ key: 'a', value: 1 });

    // Assess
    await expect(settled).rejects.toThrow('retries never settle: 3 retry invocations played and 1 copy still pending (first: source-0@0, attempt 5)');
  });

  it('takes decoded values for a registry format, read without a registry, through retries and into dead letters', async () => {
    // Prepare: nothing listens at the registry's URL; a decoded value never asks it.
    const handler = lanes({ group: 'orders-svc', key: protobuf<string>({ registry: 'http://127.0.0.1:1' }), value: { deserializer: avro({ registry: 'http://127.0.0.1:1' }), schema: order } }, async (record, ctx) => {
      if (record.value.amount < 0) throw new NonRetriableError('negative');
      if (ctx.attempt === 1 && record.value.id === 'o-2') throw new Error('flaky');
    });
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([
      { key: 'c-1', value: { id: 'o-1', amount: 5 } },
      { key: 'c-2', value: { id: 'o-2', amount: 7 } },
      { key: 'c-3', value: { id: 'o-3', amount: -1 } },
    ]);

    // Assess
    // The key as the trigger delivers it, JSON text (a lane's key is its bytes).
    expect(t.runs.filter((run) => run.status === 'succeeded').map((run) => [run.key, run.value.id, run.attempt])).toEqual(expect.arrayContaining([['"c-1"', 'o-1', 1], ['"c-2"', 'o-2', 2]]));
    expect(t.retries.map((retry) => retry.key)).toEqual(['"c-2"']);
    expect(t.deadLetters.map((letter) => [letter.reason, letter.value])).toEqual([['non-retriable', { id: 'o-3', amount: -1 }]]);
  });

  it('records the value ctx.send was given to a topic with a registry format, encoding nothing (no registry is asked)', async () => {
    // Prepare: nothing listens at the registry's URL.
    const enriched = avro<{ id: string }>({ registry: 'http://127.0.0.1:1', subject: 'enriched-value', schema: { type: 'record', name: 'E', fields: [{ name: 'id', type: 'string' }] } });
    const handler = lanes({ group: 'orders-svc', value: 'string', outputFormats: { enriched } }, async (record, ctx) => {
      ctx.send('enriched', { key: 'k', value: { id: record.value } });
    });
    const t = testLanes(handler, { topic: 'orders', outputs: ['enriched'] });

    // Act
    await t.run([{ key: 'c-1', value: 'o-1' }]);

    // Assess
    expect(t.outputs.map((output) => [output.topic, output.value])).toEqual([['enriched', { id: 'o-1' }]]);
    expect(t.deadLetters).toEqual([]);
  });

  it('takes bytes for a registry format as the wire format, and dead-letters bytes without a frame with the reason', async () => {
    // Prepare: no registry: the frame is read before any schema is needed.
    const handler = lanes({ group: 'orders-svc', value: avro({ registry: 'http://127.0.0.1:1' }) }, async () => undefined);
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.deliver([{ key: 'c-1', value: Buffer.from('{"id":"o-1"}') }]);

    // Assess
    expect(t.deadLetters.map((letter) => [letter.reason, letter.error?.message])).toEqual([['deserialization', expect.stringContaining('expected magic byte 0 (Confluent wire format) or header version 3 (Glue), got 0x7b')]]);
  });

  it('loads neither kafkajs nor ioredis nor an AWS SDK client, even running steps, outputs and retries', async () => {
    // Prepare
    const loaded: string[] = [];
    const packages = ['kafkajs', 'ioredis', '@aws-sdk/client-kafka', '@aws-sdk/client-secrets-manager', '@aws-sdk/client-ssm', 'aws-msk-iam-sasl-signer-js'];

    // Act
    await jest.isolateModulesAsync(async () => {
      for (const name of packages) {
        jest.doMock(name, () => {
          loaded.push(name);
          return jest.requireActual(name);
        });
      }
      const entry = await import('../../../src');
      const { testLanes: isolated } = await import('../../../src/testing');
      const handler = entry.lanes({ group: 'g', value: 'json' }, async (_record, ctx) => {
        await ctx.step('s', () => 1);
        if (ctx.attempt === 1) throw new Error('again');
        ctx.send('out', { value: 1 });
      });
      const t = isolated(handler);
      await t.run({ key: 'a', value: 1 });
      expect(t.outputs).toHaveLength(1);
    });

    // Assess
    expect(loaded).toEqual([]);
  });

  it('keeps its methods bound: what a test takes out of it works on its own', async () => {
    // Prepare
    const handler = lanes({ group: 'orders-svc', value: 'json' }, async (record, ctx) => {
      if (record.origin.offset === 0 && ctx.attempt === 1) throw new Error('once');
    });
    const { run, order, assertOrder, now, retries, runs } = testLanes(handler, { topic: 'orders', now: 1_000 });

    // Act
    await run([{ key: 'a', value: 1 }, { key: 'a', value: 2 }]);

    // Assess
    expect(order('a')).toEqual([0, 0, 1]);
    expect(() => assertOrder()).not.toThrow();
    expect(retries).toHaveLength(1);
    expect(runs).toHaveLength(3);
    expect(now()).toBe(1_000 + (retries[0]?.delayMs ?? Number.NaN));
  });

  it('says what the retries would cost on AWS: the rounds of the retry function billed, the waits for due times suspended', async () => {
    // Prepare: a record failing on every attempt of the README's tiers, another succeeding at once.
    const handler = lanes({ group: 'g', value: 'string', retry: { maxAttempts: 4, tiers: ['5s', '1m', '10m'] } }, async (record) => {
      if (record.value === 'poison') throw new Error('always');
    });
    const t = testLanes(handler);

    // Act
    await t.run([{ key: 'a', value: 'poison' }, { key: 'b', value: 'fine' }]);

    // Assess: three copies, each run by one round once due; they waited 5 s, 60 s and 600 s, billing nothing.
    expect(t.deadLetters).toHaveLength(1);
    expect(t.retryTime).toEqual({ copies: 3, rounds: 3, billedMs: expect.any(Number), suspendedMs: 665_000 });
  });
});
