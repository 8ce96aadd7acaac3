import { NonRetriableError } from '../../../src/errors';
import { HandOffHeader } from '../../../src/handoff/headers';
import { LegacyOutputHeader, OUTPUT_HEADER } from '../../../src/lanes/effects';
import { StepNameError, StepResultTooLargeError } from '../../../src/engine/steps';
import { idempotencyKeyOf } from '../../../src/engine/idempotency-key';
import { outputIdOf, parseOutputId } from '../../../src/engine/outputs';
import { copyRecord, drainRetries, engineRig, RIG_GROUP, RIG_REF, RIG_SOURCE, sourceRecord } from '../../support/engine-rig';
import { EffectsModel } from '../../../src/testing/effects-model';
import type { KafkaRecordInput } from '../../../src/event';

const at = (offset: number) => ({ ref: RIG_REF, offset });

describe('ctx.step', () => {
  it('returns the stored result when the record runs again after a failure, without running the step again', async () => {
    // Prepare
    const effects = new EffectsModel();
    let charges = 0;
    const results: unknown[] = [];
    const r = engineRig({}, async (_record, ctx) => {
      const charge = await ctx.step('charge', async () => ({ id: `ch_${(charges += 1)}` }));
      results.push(charge);
      if (ctx.attempt === 1) throw new Error('the ledger is down');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);
    await drainRetries(r);

    // Assess
    expect(charges).toBe(1);
    expect(results).toEqual([{ id: 'ch_1' }, { id: 'ch_1' }]);
    expect(r.runs.map((run) => run.attempt)).toEqual([1, 2]);
    // Done on a retry copy: its steps live under the source partition, not the copy's, and go in a call of their own.
    expect(effects.stepsOf(at(0))).toBeUndefined();
    expect(effects.calls.forgetSteps).toBe(1);
  });

  it('runs the steps of one record one after another, in call order, even when started together', async () => {
    // Prepare
    const effects = new EffectsModel();
    const order: string[] = [];
    const r = engineRig({}, async (_record, ctx) => {
      await Promise.all(['a', 'b', 'c'].map((name) => ctx.step(name, async () => {
        order.push(`start ${name}`);
        await new Promise((resolve) => setImmediate(resolve));
        order.push(`end ${name}`);
      })));
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);

    // Assess
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('dead-letters a record whose handler uses one step name twice in a run', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (_record, ctx) => {
      await ctx.step('charge', () => 1);
      await ctx.step('charge', () => 2);
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);

    // Assess
    expect(r.sink.items).toHaveLength(1);
    expect(r.sink.items[0]).toMatchObject({ kind: 'dead-letter', reason: 'non-retriable', error: { name: StepNameError.name } });
    expect(r.sink.items[0]!.error!.message).toContain('step `charge` ran twice in one run');
  });

  it('dead-letters a record whose step result is above steps.maxBytes, saying so', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({ steps: { maxBytes: 10 } }, async (_record, ctx) => {
      await ctx.step('receipt', () => 'x'.repeat(20));
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);

    // Assess
    expect(r.sink.items[0]).toMatchObject({ kind: 'dead-letter', error: { name: StepResultTooLargeError.name } });
    expect(r.sink.items[0]!.error!.message).toContain('above `steps.maxBytes` (10)');
    expect(effects.stepsOf(at(0))).toBeUndefined();
  });

  it('keeps a step that returns nothing as completed, and uses a serializer given', async () => {
    // Prepare
    const effects = new EffectsModel();
    let runs = 0;
    const seen: unknown[] = [];
    const serializer = { serialize: (value: unknown) => `v:${String(value)}`, deserialize: (text: string) => text.slice(2) };
    const r = engineRig({ steps: { serializer } }, async (_record, ctx) => {
      await ctx.step('notify', () => {
        runs += 1;
      });
      seen.push(await ctx.step('code', () => 42));
      if (ctx.attempt === 1) throw new Error('later');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);
    await drainRetries(r);

    // Assess
    expect(runs).toBe(1);
    expect(seen).toEqual(['42', '42']);
  });

  it('costs a handler without steps one marker read per partition, and deletes step results in the call that stores the done bit', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (record, ctx) => {
      if (record.origin.offset === 1) await ctx.step('one', () => 'ok');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);
    const afterPlain = effects.roundTrips;
    await r.deliver([sourceRecord(1, 'b')]);

    // Assess: the marker was read for the first batch only; offset 1, admitted when no step was known, read its steps.
    expect(afterPlain).toBe(1);
    expect(effects.calls).toMatchObject({ stepsStoredUpTo: 1, loadSteps: 1, saveStep: 1, forgetSteps: 0 });
    expect(effects.stepsOf(at(1))).toBeUndefined();
    expect(r.store.calls.filter((call) => call === 'mark')).toHaveLength(2);
    expect(r.store.partition(RIG_REF).model.isDone(1)).toBe(true);
  });

  it('reads no steps for a record admitted for the first time, and reads them for a record admitted before', async () => {
    // Prepare: offset 1 was admitted and ran its step in a process that died before its done bit.
    const effects = new EffectsModel();
    const runs: number[] = [];
    const r = engineRig({}, async (record, ctx) => {
      await ctx.step('one', () => runs.push(record.origin.offset));
    }, undefined, effects);
    await r.deliver([sourceRecord(0, 'a')]);
    await r.store.admit(RIG_REF, [{ offset: 1 }]);
    await effects.saveStep(at(1), 'one', '1');
    const before = { ...effects.calls };

    // Act
    await r.deliver([sourceRecord(1, 'b'), sourceRecord(2, 'c'), sourceRecord(3, 'd')]);

    // Assess: only offset 1 was read (and found: its step did not run again).
    expect(runs).toEqual([0, 2, 3]);
    expect(effects.calls.loadSteps - before.loadSteps).toBe(1);
    expect([1, 2, 3].every((offset) => r.store.partition(RIG_REF).model.isDone(offset))).toBe(true);
  });

  it('reads the steps of a record below the stepped marker when the partition\'s completion state was lost', async () => {
    // Prepare: step results of offsets 5 and 6 are stored; the completion state that admitted them is gone.
    const effects = new EffectsModel();
    const runs: number[] = [];
    const handler = async (record: { origin: { offset: number } }, ctx: { step: (name: string, fn: () => unknown) => Promise<unknown> }): Promise<void> => {
      await ctx.step('one', () => runs.push(record.origin.offset));
    };
    await engineRig({}, handler, undefined, effects).deliver([sourceRecord(0, 'a')]);
    await effects.saveStep(at(5), 'one', '1');
    await effects.saveStep(at(6), 'one', '1');
    const r = engineRig({}, handler, undefined, effects);

    // Act
    await r.deliver([sourceRecord(5, 'a')]);
    await r.deliver([sourceRecord(6, 'b'), sourceRecord(7, 'c')]);

    // Assess: 5 and 6 found their results; 0 (the first batch, no marker yet) and 7 (above the marker, never
    // admitted) ran their steps without a read.
    expect(runs).toEqual([0, 7]);
    expect(effects.calls.loadSteps).toBe(2);
  });

  it('reads no steps in the first batch of a new process when the partition has no stored results', async () => {
    // Prepare
    const effects = new EffectsModel();
    const runs: number[] = [];
    const r = engineRig({}, async (record, ctx) => {
      await ctx.step('one', () => runs.push(record.origin.offset));
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a'), sourceRecord(1, 'b'), sourceRecord(2, 'a')]);

    // Assess: one marker read for the partition, no read of any record's steps.
    expect(runs).toEqual([0, 1, 2]);
    expect(effects.calls).toMatchObject({ stepsStoredUpTo: 1, loadSteps: 0, saveStep: 3 });
  });

  it('keeps step results of a record in the retry path and of a dead letter (for a replay)', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (_record, ctx) => {
      await ctx.step('charge', () => 'ch_1');
      throw new NonRetriableError('the order is void');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);

    // Assess
    expect(r.sink.items[0]).toMatchObject({ kind: 'dead-letter' });
    expect(effects.stepsOf(at(0))?.get('charge')).toBe('"ch_1"');
  });
});

describe('ctx.idempotencyKey', () => {
  it('is the same for the first run, a retry copy and a replayed dead letter', async () => {
    // Prepare
    const effects = new EffectsModel();
    const keys: string[] = [];
    const r = engineRig({}, async (_record, ctx) => {
      keys.push(ctx.idempotencyKey);
      await ctx.step('charge', () => 'ch_1');
      if (keys.length <= 3) throw new Error('down');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(5, 'a')]);
    await drainRetries(r);
    const letter = r.sink.items.find((item) => item.kind === 'dead-letter')!;
    // `kafka-lanes dlq replay` writes a released dead letter back to its topic, a new record with its first origin.
    const replayed: KafkaRecordInput = {
      ...copyRecord(letter, 0), topic: RIG_SOURCE, offset: 77,
      headers: [{ name: HandOffHeader.FirstOrigin, value: Buffer.from(`${RIG_SOURCE}/0/5`) }],
    };
    await r.deliver([replayed]);

    // Assess
    expect(keys).toEqual(Array(4).fill(`${RIG_GROUP}:${RIG_SOURCE}:0:5`));
    expect(effects.calls.saveStep).toBe(1);
  });

  it('hashes a key longer than 255 characters', () => {
    const key = idempotencyKeyOf('g'.repeat(200), { topic: 't'.repeat(100), partition: 1, offset: 2 });
    expect(key).toMatch(/^kl-sha256:[0-9a-f]{64}$/);
  });
});

describe('ctx.send', () => {
  it('produces the outputs of a run that succeeded, identified by group, origin and index, before the done bit', async () => {
    // Prepare
    const effects = new EffectsModel();
    let doneWhenSent: boolean | undefined;
    const r = engineRig({}, async (_record, ctx) => {
      ctx.send('receipts', { key: 'a', value: { n: 1 } });
      ctx.send('audit', { value: 'plain', headers: { trace: 't-1' } });
    }, undefined, effects);
    const send = r.sink.send.bind(r.sink);
    r.sink.send = async (outputs) => {
      doneWhenSent = r.store.partition(RIG_REF).model.isDone(3);
      return send(outputs);
    };

    // Act
    await r.deliver([sourceRecord(3, 'a')]);

    // Assess
    expect(doneWhenSent).toBe(false);
    expect(r.store.partition(RIG_REF).model.isDone(3)).toBe(true);
    expect(r.sink.outputs.sent.map((o) => [o.topic, o.value, o.headers[OUTPUT_HEADER]])).toEqual([
      ['receipts', '{"n":1}', `${RIG_GROUP}/${RIG_SOURCE}/0/3/0`], ['audit', 'plain', `${RIG_GROUP}/${RIG_SOURCE}/0/3/1`],
    ]);
    expect(r.sink.outputs.sent[1]!.headers).toEqual({ trace: 't-1', [OUTPUT_HEADER]: `${RIG_GROUP}/${RIG_SOURCE}/0/3/1` });
  });

  it('drops the outputs of a run that failed: only the run that succeeds sends', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (_record, ctx) => {
      ctx.send('receipts', { value: `attempt ${ctx.attempt}` });
      if (ctx.attempt === 1) throw new Error('fails after sending');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(3, 'a')]);
    const afterFailure = r.sink.outputs.sent.length;
    await drainRetries(r);

    // Assess
    expect(afterFailure).toBe(0);
    expect(r.sink.outputs.sent.map((o) => o.value)).toEqual(['attempt 2']);
  });

  it('gives the slot of a record waiting for its outputs\' acknowledgement to another key, not to a record of its own key', async () => {
    // Prepare
    const effects = new EffectsModel();
    const events: string[] = [];
    const r = engineRig({ concurrency: 1 }, async (record, ctx) => {
      events.push(`start ${record.offset}`);
      if (record.offset === 0) ctx.send('receipts', { value: 'r0' });
    }, undefined, effects);
    const send = r.sink.send.bind(r.sink);
    r.sink.send = async (outputs) => {
      // Acknowledged only once another record had the chance to start.
      await new Promise((resolve) => setTimeout(resolve, 20));
      events.push('ack 0');
      return send(outputs);
    };

    // Act
    const response = await r.deliver([sourceRecord(0, 'a'), sourceRecord(1, 'b'), sourceRecord(2, 'a')]);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(events).toEqual(['start 0', 'start 1', 'ack 0', 'start 2']);
    expect([0, 1, 2].map((offset) => r.store.partition(RIG_REF).model.isDone(offset))).toEqual([true, true, true]);
  });

  it('fails only the record whose outputs were not acknowledged when records finishing together send together', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (record, ctx) => {
      ctx.send(record.offset === 1 ? 'missing' : 'receipts', { value: `r${record.offset}` });
    }, undefined, effects);
    r.sink.outputs.missingTopics.add('missing');
    const sends: number[] = [];
    const send = r.sink.send.bind(r.sink);
    r.sink.send = (records) => {
      sends.push(records.length);
      return send(records);
    };

    // Act
    await r.deliver([sourceRecord(0, 'a'), sourceRecord(1, 'b'), sourceRecord(2, 'c')]);

    // Assess
    expect(sends).toEqual([3]);
    expect(r.sink.outputs.sent.map((o) => o.value)).toEqual(['r0', 'r2']);
    expect(r.sink.items.filter((item) => item.kind === 'retry').map((item) => item.origin.offset)).toEqual([1]);
    expect([0, 1, 2].map((offset) => r.store.partition(RIG_REF).model.isDone(offset))).toEqual([true, true, true]);
  });

  it('fails the record when its outputs are not acknowledged, and sends them when it runs again', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({}, async (_record, ctx) => {
      ctx.send('receipts', { value: 'r' });
    }, undefined, effects);
    r.sink.outputs.failing = true;

    // Act
    await r.deliver([sourceRecord(0, 'a')]);
    const retries = r.sink.items.filter((item) => item.kind === 'retry').length;
    r.sink.outputs.failing = false;
    await drainRetries(r);

    // Assess
    expect(retries).toBe(1);
    expect(r.sink.outputs.sent).toHaveLength(1);
  });
});

describe('dedupeOutputs', () => {
  // Outputs written before the one `lanes-output` header carried three: a stage reads both (they may wait in a topic).
  const identities: Array<[string, (index: number) => Array<{ name: string; value: Buffer }>]> = [
    ['its lanes-output header', (index) => [{ name: OUTPUT_HEADER, value: Buffer.from(`stage-1/orders/2/40/${index}`) }]],
    ['the three headers of earlier versions', (index) => [
      { name: LegacyOutputHeader.Group, value: Buffer.from('stage-1') },
      { name: LegacyOutputHeader.Origin, value: Buffer.from('orders/2/40') },
      { name: LegacyOutputHeader.Index, value: Buffer.from(String(index)) },
    ]],
  ];

  it.each(identities)('skips a repeat of an output (identified by %s) that another record of the group already took, and runs its own redelivery', async (_, identity) => {
    // Prepare
    const effects = new EffectsModel();
    const seen: number[] = [];
    const r = engineRig({ dedupeOutputs: true }, (record) => {
      seen.push(record.origin.offset);
    }, undefined, effects);
    const output = (offset: number, index: number): KafkaRecordInput => ({ ...sourceRecord(offset, 'a'), headers: identity(index) });

    // Act
    await r.deliver([output(0, 0), output(1, 1), output(2, 0), sourceRecord(3, 'a')]);
    r.store.partition(RIG_REF).model.unmark([0]);
    await r.deliver([output(0, 0)]);

    // Assess
    expect(seen).toEqual([0, 1, 3, 0]);
    expect(r.store.partition(RIG_REF).model.isDone(2)).toBe(true);
    expect(outputIdOf(output(0, 0).headers!.map((h) => ({ name: h.name, value: h.value as Buffer })))).toEqual({ group: 'stage-1', origin: { topic: 'orders', partition: 2, offset: 40 }, index: 0 });
  });

  it('takes an output written with the three headers of earlier versions and its repeat written with the one header for one output', async () => {
    // Prepare
    const effects = new EffectsModel();
    const seen: number[] = [];
    const r = engineRig({ dedupeOutputs: true }, (record) => {
      seen.push(record.origin.offset);
    }, undefined, effects);
    const [legacy, current] = [identities[1]![1], identities[0]![1]];

    // Act
    await r.deliver([{ ...sourceRecord(0, 'a'), headers: legacy(0) }, { ...sourceRecord(1, 'a'), headers: current(0) }, { ...sourceRecord(2, 'a'), headers: current(1) }]);

    // Assess
    expect(seen).toEqual([0, 2]);
    expect(r.store.partition(RIG_REF).model.isDone(1)).toBe(true);
  });

  it('reads a lanes-output header and takes a garbled one for no output (the record runs like any other)', () => {
    expect(parseOutputId('orders-svc.v2/orders_eu/12/9007199254740991/3')).toEqual({
      group: 'orders-svc.v2', origin: { topic: 'orders_eu', partition: 12, offset: 9_007_199_254_740_991 }, index: 3,
    });
    for (const garbled of ['', 'g', 'g/orders/0/1', '/orders/0/1/0', 'g/orders/0/1/', 'g/orders/0/1/01', 'g/orders/x/1/0', 'g/or ders/0/1/0', 'g/orders/0/1/-1', 'g/orders/0/1/0/0']) {
      expect(parseOutputId(garbled)).toBeUndefined();
    }
    expect(outputIdOf([{ name: OUTPUT_HEADER, value: Buffer.from('not an identity') }])).toBeUndefined();
  });
});

describe('unordered retry copies', () => {
  it('run once per (origin, attempt): a twin copy does nothing, nor does a copy of a record already terminal', async () => {
    // Prepare
    const effects = new EffectsModel();
    const r = engineRig({ ordering: 'unordered' }, (_record, ctx) => {
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    }, undefined, effects);

    // Act
    await r.deliver([sourceRecord(0, 'a')]);
    const [copy] = r.sink.take();
    await r.redeliver([copy!, copy!]);
    await r.redeliver([copy!]);

    // Assess
    expect(r.runs.map((run) => run.attempt)).toEqual([1, 2]);
  });
});
