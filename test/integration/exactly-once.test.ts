import type { Context } from 'aws-lambda';
import { Redis, type Cluster } from 'ioredis';
import { lanes } from '../../src';
import { RedisEffects, RECORDS_PER_CALL } from '../../src/completion/effects-store';
import { copyKey, legacyStepsKey, outputClaimKey, steppedKey, stepsBlockKey } from '../../src/completion/keys';
import { CompletionStore } from '../../src/completion/store';
import { idempotencyCacheClient } from '../../src/connections/powertools-cache';
import { OUTPUT_HEADER } from '../../src/lanes/effects';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { createTopic, REDIS_URL, redisSetups, uniqueName } from './support/stack';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

describe.each(redisSetups())('the exactly-once scripts on $name Redis', ({ connect }) => {
  let redis: Redis | Cluster;
  beforeAll(() => {
    redis = connect();
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('stores a step result once, keeps the first one stored, with a time to live, and deletes it on request', async () => {
    // Prepare
    const effects = new RedisEffects(redis);
    const at = { ref: { group: uniqueName('g'), topic: 'orders', partition: 2 }, offset: 41 };

    // Act
    const first = await effects.saveStep(at, 'charge', '"ch_1"', 60_000);
    const second = await effects.saveStep(at, 'charge', '"ch_2"', 60_000);
    await effects.saveStep(at, 'record', '', 60_000);
    const loaded = await effects.loadSteps(at);
    const ttl = await redis.pttl(stepsBlockKey(at));
    await effects.forgetSteps([{ ...at, names: ['charge', 'record'] }]);

    // Assess
    expect([first, second]).toEqual([undefined, '"ch_1"']);
    expect([...loaded]).toEqual([['charge', '"ch_1"'], ['record', '']]);
    expect(ttl).toBeGreaterThan(0);
    expect(await redis.exists(stepsBlockKey(at))).toBe(0);
  });

  it('keeps every step of a record apart, whatever its name and result hold, and each block apart from its neighbours', async () => {
    // Prepare: names and results with the entry format's own characters, digits, multi-byte text and nothing at all.
    const effects = new RedisEffects(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 0 };
    const steps: Array<[string, string]> = [['a:b', '"12:x"'], ['3:', ''], ['ünï', '"é:ü 4:ab"'], ['a', '{"n":1}']];
    const records = [63, 64, 65];

    // Act: the steps of three records, in two blocks, one step at a time as a handler stores them.
    for (const [name, result] of steps) {
      await Promise.all(records.map((offset) => effects.saveStep({ ref, offset }, name, `${result}${offset}`, 60_000)));
    }
    const again = await effects.saveStep({ ref, offset: 64 }, 'ünï', '"another"', 60_000);
    const loaded = await Promise.all(records.map((offset) => effects.loadSteps({ ref, offset })));

    // Assess
    expect(again).toBe('"é:ü 4:ab"64');
    expect(loaded.map((m) => [...m])).toEqual(records.map((offset) => steps.map(([name, result]) => [name, `${result}${offset}`])));
    const fields = (offset: number) => steps.map(([name]) => `${offset}:${name}`);
    const blocks = await Promise.all([63, 64].map(async (offset) => (await redis.hkeys(stepsBlockKey({ ref, offset }))).sort()));
    expect(blocks).toEqual([fields(63).sort(), [...fields(64), ...fields(65)].sort()]);
  });

  it('reads the results a record stored in a hash of its own (scripts version 11), and a result stored since in its block first', async () => {
    // Prepare: a record in flight across the upgrade, its steps stored the old way by a run of the previous version.
    const effects = new RedisEffects(redis);
    const at = { ref: { group: uniqueName('g'), topic: 'orders', partition: 0 }, offset: 7 };
    await redis.hset(legacyStepsKey(at), 'charge', '"ch_old"', 'email', '"sent"');
    await redis.pexpire(legacyStepsKey(at), 60_000);

    // Act: this version reads them, and stores a later step (and a repeat of an old one, as a detached run might).
    const before = await effects.loadSteps(at);
    await effects.saveStep(at, 'ship', '"sh_1"', 60_000);
    await effects.saveStep(at, 'email', '"sent again"', 60_000);
    const after = await effects.loadSteps(at);

    // Assess
    expect([...before]).toEqual([['charge', '"ch_old"'], ['email', '"sent"']]);
    expect([...after]).toEqual([['ship', '"sh_1"'], ['email', '"sent again"'], ['charge', '"ch_old"']]);
  });

  it('reads and stores the steps of records running at once in one call per partition', async () => {
    // Prepare
    const effects = new RedisEffects(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 1 };
    const other = { ...ref, partition: 2 };
    const ats = [0, 1, 2].map((offset) => ({ ref, offset }));
    await effects.saveStep(ats[1]!, 'charge', '"before"', 60_000);
    let calls = 0;
    const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
    const send = client.sendCommand.bind(client);
    client.sendCommand = (...args: unknown[]) => {
      calls += 1;
      return send(...args);
    };

    // Act
    const loaded = await Promise.all([...ats, { ref: other, offset: 0 }].map((at) => effects.loadSteps(at)));
    const afterLoads = calls;
    const saved = await Promise.all(ats.map((at, i) => effects.saveStep(at, 'charge', `"ch_${i}"`, 60_000)));
    client.sendCommand = send;

    // Assess
    expect(loaded.map((m) => [...m])).toEqual([[], [['charge', '"before"']], [], []]);
    expect(afterLoads).toBe(2);
    expect(calls).toBe(3);
    expect(saved).toEqual([undefined, '"before"', undefined]);
  });

  it(`splits the steps of more than ${RECORDS_PER_CALL} records of one turn into calls of at most ${RECORDS_PER_CALL}, each stored or answered`, async () => {
    // Prepare: two calls' worth of records of one partition and a few more, one of them with a result stored by an
    // earlier run.
    const effects = new RedisEffects(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 4 };
    const count = 2 * RECORDS_PER_CALL + 8;
    const before = RECORDS_PER_CALL + 17;
    const ats = Array.from({ length: count }, (_, offset) => ({ ref, offset }));
    await effects.saveStep(ats[before]!, 'charge', '"before"', 60_000);
    let calls = 0;
    const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
    const send = client.sendCommand.bind(client);
    client.sendCommand = (...args: unknown[]) => {
      calls += 1;
      return send(...args);
    };

    // Act
    const loaded = await Promise.all(ats.map((at) => effects.loadSteps(at)));
    const afterLoads = calls;
    const saved = await Promise.all(ats.map((at) => effects.saveStep(at, 'charge', `"ch_${at.offset}"`, 60_000)));
    client.sendCommand = send;
    const reader = new RedisEffects(redis);
    const stored = await Promise.all(ats.map(async (at) => (await reader.loadSteps(at)).get('charge')));

    // Assess
    expect([afterLoads, calls - afterLoads]).toEqual([3, 3]);
    expect(loaded.map((m, offset) => (m.size === 0 ? undefined : `${offset}: ${m.get('charge')}`)).filter(Boolean)).toEqual([`${before}: "before"`]);
    expect(saved).toEqual(ats.map((at) => (at.offset === before ? '"before"' : undefined)));
    expect(stored).toEqual(ats.map((at) => (at.offset === before ? '"before"' : `"ch_${at.offset}"`)));
    expect(await effects.stepsStoredUpTo(ref)).toBe(count - 1);
  });

  it('stores and answers each of many step stores made in one turn, also when the connection drops as they go out', async () => {
    // Records finishing their steps together make many calls in one turn on one connection: each must be stored and
    // answered with its own result, also when the connection drops once they are written (they go out again on the
    // new one) or before (they wait for it).
    const effects = new RedisEffects(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 5 };
    const ats = Array.from({ length: 10 * RECORDS_PER_CALL + 3 }, (_, offset) => ({ ref, offset }));
    const store = (value: string): Array<Promise<string | undefined>> => ats.map((at) => effects.saveStep(at, 'charge', `"${value}_${at.offset}"`, 60_000));

    await redis.ping();

    // Act
    const saved = await Promise.all(store('ch'));
    const inFlight = store('other');
    await new Promise((resolve) => setImmediate(resolve));
    redis.disconnect(true);
    const afterDrop = await Promise.all(inFlight);
    const beforeWrite = store('third');
    redis.disconnect(true);
    const afterWait = await Promise.all(beforeWrite);
    const stored = await Promise.all(ats.map(async (at) => (await new RedisEffects(redis).loadSteps(at)).get('charge')));

    // Assess: the first stores kept, the later ones answered with them.
    expect(saved).toEqual(ats.map(() => undefined));
    expect(afterDrop).toEqual(ats.map((at) => `"ch_${at.offset}"`));
    expect(afterWait).toEqual(ats.map((at) => `"ch_${at.offset}"`));
    expect(stored).toEqual(ats.map((at) => `"ch_${at.offset}"`));
  });

  it('keeps the highest offset of a partition with stored step results, living as long as they do', async () => {
    // Prepare
    const effects = new RedisEffects(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 3 };
    const before = await effects.stepsStoredUpTo(ref);
    const beforeAgain = await effects.stepsStoredUpTo(ref);

    // Act
    await Promise.all([7, 9, 8].map((offset) => effects.saveStep({ ref, offset }, 'charge', '"ch"', 60_000)));
    const afterFirst = await effects.stepsStoredUpTo(ref);
    await effects.saveStep({ ref, offset: 4 }, 'charge', '"ch"', 120_000);

    // Assess: before any step went through the store, read once (none stored), then not known; then the highest,
    // never moved down.
    expect([before, beforeAgain]).toEqual([-1, undefined]);
    expect(afterFirst).toBe(9);
    expect(await effects.stepsStoredUpTo(ref)).toBe(9);
    expect(await redis.pttl(steppedKey(ref))).toBeGreaterThan(60_000);
  });

  it('lets the first record take an output and refuses a repeat at another offset', async () => {
    // Prepare
    const effects = new RedisEffects(redis);
    const group = uniqueName('g');
    const id = { group: 'stage-1', origin: { topic: 'orders', partition: 0, offset: 7 }, index: 1 };

    // Act
    const taken = await effects.claimOutput(group, id, 'mid/0/10', 60_000);
    const again = await effects.claimOutput(group, id, 'mid/0/10', 60_000);
    const repeat = await effects.claimOutput(group, id, 'mid/1/3', 60_000);

    // Assess
    expect([taken, again, repeat]).toEqual([true, true, false]);
  });

  it('takes the outputs of records starting together in calls per origin partition, a repeat in the same call refused', async () => {
    // Prepare: a call's worth and 4 more outputs of origin partition 0 (the last one twice, at two offsets of this
    // stage) and 3 of partition 1.
    const effects = new RedisEffects(redis);
    const group = uniqueName('g');
    const output = (partition: number, offset: number): { group: string; origin: { topic: string; partition: number; offset: number }; index: number } =>
      ({ group: 'stage-1', origin: { topic: 'orders', partition, offset }, index: 0 });
    const claims = [
      ...Array.from({ length: RECORDS_PER_CALL + 4 }, (_, i) => ({ id: output(0, i), runner: `mid/0/${i}` })),
      { id: output(0, RECORDS_PER_CALL + 3), runner: 'mid/0/99' },
      ...[0, 1, 2].map((i) => ({ id: output(1, i), runner: `mid/0/${50 + i}` })),
    ];
    let calls = 0;
    const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
    const send = client.sendCommand.bind(client);
    client.sendCommand = (...args: unknown[]) => {
      calls += 1;
      return send(...args);
    };

    // Act
    const taken = await Promise.all(claims.map(({ id, runner }) => effects.claimOutput(group, id, runner, 60_000)));
    client.sendCommand = send;
    const ttl = await redis.pttl(outputClaimKey(group, output(1, 2)));

    // Assess: the claims of partition 0 in a full call and one of 5, partition 1's in one; only the repeat refused.
    expect(calls).toBe(3);
    expect(taken).toEqual(claims.map(({ runner }) => runner !== 'mid/0/99'));
    expect(ttl).toBeGreaterThan(0);
  });

  it('runs one copy per (origin, attempt) and none after the record is terminal', async () => {
    // Prepare
    const store = new CompletionStore(redis);
    const ref = { group: uniqueName('g'), topic: 'orders', partition: 0 };

    // Act
    const results = [
      await store.claimCopy(ref, { offset: 5, attempt: 2, copy: 'r:0:1', ttlMs: 60_000, done: false }),
      await store.claimCopy(ref, { offset: 5, attempt: 2, copy: 'r:0:1', ttlMs: 60_000, done: false }), // its own redelivery
      await store.claimCopy(ref, { offset: 5, attempt: 2, copy: 'r:0:2', ttlMs: 60_000, done: false }), // a twin
      await store.claimCopy(ref, { offset: 5, attempt: 3, copy: 'r:0:3', ttlMs: 60_000, done: false }), // the next attempt
      await store.claimCopy(ref, { offset: 5, attempt: 2, copy: 'r:0:4', ttlMs: 60_000, done: false }), // an older attempt, late
      await store.claimCopy(ref, { offset: 5, attempt: 3, copy: 'r:0:3', ttlMs: 60_000, done: true }), // succeeded
      await store.claimCopy(ref, { offset: 5, attempt: 3, copy: 'r:0:3', ttlMs: 60_000, done: false }), // redelivered after its success
    ];

    // Assess
    expect(results).toEqual(['claimed', 'claimed', 'stale', 'claimed', 'stale', 'claimed', 'stale']);
    expect(await redis.pttl(copyKey(ref, 5))).toBeGreaterThan(0);
  });
});

describe('lanes() with steps and outputs on Kafka and Redis', () => {
  it('charges once across a retry, sends the outputs of the run that succeeded, and deletes step results once done', async () => {
    // Prepare
    const group = uniqueName('grp');
    const topic = uniqueName('src');
    const out = uniqueName('out');
    await Promise.all([createTopic(topic, 1), createTopic(out, 1), ...['5s', '1m', '10m'].map((tier) => createTopic(`${group}.retry.${tier}`, 1))]);
    const charges = new Map<string, number>();
    const keys = new Map<string, Set<string>>();
    const handler = lanes({ group, redis: { url: REDIS_URL }, retry: { backoff: { type: 'fixed', delayMs: 1 } } }, async (record, ctx) => {
      const name = String(record.key);
      (keys.get(name) ?? keys.set(name, new Set()).get(name)!).add(ctx.idempotencyKey);
      const charge = await ctx.step('charge', async () => {
        charges.set(name, (charges.get(name) ?? 0) + 1);
        return { id: `ch-${name}-${ctx.attempt}` };
      });
      ctx.send(out, { key: name, value: { charge: charge.id, attempt: ctx.attempt } });
      if (name === 'b' && ctx.attempt === 1) throw new Error('the ledger is down');
    });
    await produce(topic, ['a', 'b', 'c'].map((key) => ({ key, value: '{}' })));
    const records = await fetchRecords(topic, 3);
    const redis = new Redis(REDIS_URL);

    try {
      // Act
      const first = await handler(eventOf(records), contextWithin(30_000) as unknown as Context);
      const copies = await fetchRecords(`${group}.retry.5s`, 1);
      const second = await handler(eventOf(copies), contextWithin(30_000) as unknown as Context);
      const outputs = await fetchRecords(out, 3);

      // Assess
      expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(Object.fromEntries(charges)).toEqual({ a: 1, b: 1, c: 1 });
      expect([...keys.get('b')!]).toEqual([`${group}:${topic}:0:1`]);
      const seen = outputs.map((o) => ({
        key: String(o.key), value: JSON.parse(String(o.value)) as unknown,
        headers: Object.fromEntries(o.headers!.map((h) => [h.name, String(h.value)])),
      }));
      expect(seen.map((o) => [o.key, o.value])).toEqual([
        ['a', { charge: 'ch-a-1', attempt: 1 }], ['c', { charge: 'ch-c-1', attempt: 1 }], ['b', { charge: 'ch-b-1', attempt: 2 }],
      ]);
      expect(seen[2]!.headers).toEqual({ [OUTPUT_HEADER]: `${group}/${topic}/0/1/0` });
      expect(await redis.exists(stepsBlockKey({ ref: { group, topic, partition: 0 }, offset: 0 }))).toBe(0);
    } finally {
      await handler.close();
      await redis.quit();
    }
  });
});

describe.each(redisSetups())('idempotencyCacheClient (Powertools Idempotency) on $name Redis', ({ connect }) => {
  let redis: Redis | Cluster;
  beforeAll(() => {
    redis = connect();
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('sets only when absent with an expiry, in both option shapes Powertools sends, reads back and deletes', async () => {
    // Prepare
    const client = idempotencyCacheClient(redis);
    const [a, b] = [uniqueName('idem'), uniqueName('idem')];

    // Act
    const first = await client.set(a, '{"status":"INPROGRESS"}', { EX: 60, NX: true });
    const second = await client.set(a, '{"status":"COMPLETED"}', { EX: 60, NX: true });
    const glide = await client.set(b, 'x', { conditionalSet: 'onlyIfDoesNotExist', expiry: { type: 'EX', count: 60 } });
    const overwrite = await client.set(a, '{"status":"COMPLETED"}', { EX: 60 });
    const read = await client.get(a);
    const ttl = await redis.ttl(b);
    const deleted = await client.del([a, b]);

    // Assess
    expect([first, second, glide, overwrite]).toEqual(['OK', null, 'OK', 'OK']);
    expect(read).toBe('{"status":"COMPLETED"}');
    expect(ttl).toBeGreaterThan(0);
    expect(deleted).toBe(2);
    expect(await client.get(a)).toBeNull();
  });
});
