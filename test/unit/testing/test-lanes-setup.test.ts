/**
 * kafka-lanes/testing as a service's own tests use it: a handler module whose group comes from the environment,
 * the plugin's environment options, lanes derived as the engine derives them (`keyOf`, long keys), typed outputs,
 * and the middlewares a handler was given with `.use()`.
 */
import { lanes, NonRetriableError, type LanesMiddleware } from '../../../src';
import { OptionsError } from '../../../src/options';
import { testLanes } from '../../../src/testing';

const GROUP_VARIABLE = 'KAFKA_LANES_GROUP';

describe('testLanes given the group and the environment', () => {
  const saved = process.env[GROUP_VARIABLE];
  beforeEach(() => delete process.env[GROUP_VARIABLE]);
  afterAll(() => (saved === undefined ? delete process.env[GROUP_VARIABLE] : (process.env[GROUP_VARIABLE] = saved)));

  it('runs a handler whose group comes from the environment, imported where none is set', async () => {
    // Prepare: as a module's top level does it, with no KAFKA_LANES_GROUP.
    const handler = lanes({ value: 'json' }, async () => undefined);

    // Act
    const t = testLanes(handler, { group: 'orders-svc', topic: 'orders' });
    await t.run([{ key: 'c-1', value: { n: 1 } }]);

    // Assess
    expect(t.options.group).toBe('orders-svc');
    expect(t.runs.map((run) => run.idempotencyKey)).toEqual(['orders-svc:orders:0:0']);
  });

  it('still refuses a missing group where it is needed: reading the options, and without a group in the test', () => {
    const handler = lanes({ value: 'json' }, async () => undefined);
    expect(() => handler.options).toThrow(OptionsError);
    expect(() => handler.options).toThrow('Missing kafka-lanes option `group`');
    expect(() => testLanes(handler)).toThrow('Missing kafka-lanes option `group`');
  });

  it('refuses any other bad option at once, naming the missing group with it', () => {
    expect(() => lanes({ concurrency: 0 }, async () => undefined)).toThrow(/concurrency[\s\S]*Missing kafka-lanes option `group`|Missing kafka-lanes option `group`[\s\S]*concurrency/);
  });

  it("resolves the options with the environment the plugin sets: dead-letter policy, tiers, declared outputs", async () => {
    // Prepare
    const handler = lanes({ value: 'json' }, async (record, ctx) => {
      ctx.send((record.value as { to: string }).to, { key: record.key, value: { ok: true } });
    });

    // Act
    const t = testLanes(handler, {
      group: 'shop',
      env: { KAFKA_LANES_DEAD_LETTER_POLICY: 'hold', KAFKA_LANES_RETRY_TIERS: '1s,30s', KAFKA_LANES_OUTPUTS: 'orders-paid' },
    });
    await t.run([{ key: 'a', value: { to: 'orders-paid' } }, { key: 'b', value: { to: 'orders-payd' } }]);

    // Assess
    expect(t.options.deadLetter.policy).toBe('hold');
    expect(t.options.retry.tiers).toEqual(['1s', '30s']);
    expect(t.outputs.map((output) => output.topic)).toEqual(['orders-paid']);
    expect(t.deadLetters.map((letter) => [letter.key, letter.reason])).toEqual([['b', 'attempts-exhausted']]);
    expect(t.held.map((lane) => lane.key)).toEqual(['b']);
    expect(t.retries[0]).toMatchObject({ key: 'b', topic: 'shop.retry.1s', error: { message: expect.stringContaining('kafkaLanes.outputs: `orders-paid`') } });
  });
});

describe('testLanes derives lanes as the engine does', () => {
  it('holds and releases the lane keyOf names (the customer), shown by that key', async () => {
    // Prepare: Kafka keys differ per order; the lane is the customer in the value.
    const handler = lanes(
      { group: 'g', value: 'json', deadLetter: { policy: 'hold' }, keyOf: (record) => (JSON.parse(record.value!.toString()) as { customer: string }).customer },
      async (record) => {
        if ((record.value as { poison?: boolean }).poison === true) throw new NonRetriableError('poison');
      },
    );
    const t = testLanes(handler, { topic: 'orders' });

    // Act
    await t.run([{ key: 'o-1', value: { customer: 'c1', poison: true } }, { key: 'o-2', value: { customer: 'c1' } }]);

    // Assess
    expect(t.held).toEqual([expect.objectContaining({ key: 'c1', lane: Buffer.from('c1').toString('base64'), offset: 0, parked: 1 })]);
    await t.release('c1');
    expect(t.held).toEqual([]);
    expect(t.runs.map((run) => run.offset)).toEqual([0, 1]);
  });

  it('holds and releases the lane of a key long enough to be hashed, shown by its key', async () => {
    const longKey = `customer-${'x'.repeat(200)}`;
    const handler = lanes({ group: 'g', value: 'string', deadLetter: { policy: 'hold' } }, async (record) => {
      if (record.value === 'poison') throw new NonRetriableError('poison');
    });
    const t = testLanes(handler);

    await t.run([{ key: longKey, value: 'poison' }, { key: longKey, value: 'next' }]);

    expect(t.held).toEqual([expect.objectContaining({ key: longKey, lane: expect.stringMatching(/^#[A-Za-z0-9_-]{43}$/), parked: 1 })]);
    await t.release(longKey);
    expect(t.order(longKey)).toEqual([0, 1]);
    expect(t.held).toEqual([]);
  });
});

describe('testLanes on a handler with middlewares', () => {
  it('runs the middlewares .use() added around each invocation, and keeps the handler a LanesHandler', async () => {
    // Prepare
    const seen: string[] = [];
    const tracing: LanesMiddleware = {
      before: (request) => void seen.push(`before ${request.context.awsRequestId}`),
      after: (request) => void seen.push(`after ${request.response?.batchItemFailures.length ?? '-'} failures`),
    };
    const handler = lanes({ group: 'g', value: 'json' }, async (record) => void seen.push(`record ${record.offset}`)).use(tracing);

    // Act
    const t = testLanes(handler);
    await t.run([{ key: 'a', value: 1 }, { key: 'a', value: 2 }]);

    // Assess
    expect(seen).toEqual(['before test-invocation-1', 'record 0', 'record 1', 'after 0 failures']);
  });

  it('types the outputs of a topic as the test says', async () => {
    const handler = lanes({ group: 'g', value: 'json' }, async (record, ctx) => {
      ctx.send('orders-paid', { key: record.key, value: { orderId: String(record.offset), paymentId: `p-${record.offset}` } });
    });
    const t = testLanes(handler);
    await t.run([{ key: 'a', value: 1 }]);

    const paid = t.outputsTo<{ orderId: string; paymentId: string }>('orders-paid');
    expect(paid.map((output) => output.value.paymentId)).toEqual(['p-0']);
    expect(t.outputsTo('elsewhere')).toEqual([]);
  });
});
