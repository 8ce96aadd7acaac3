import type { Context } from 'aws-lambda';
import type { MiddlewareObj } from '@middy/core';
import { ConfigError, lanes, type KafkaBatchResponse } from '../../src';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { createTopic, REDIS_URL, uniqueName } from './support/stack';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

describe('lanes(): the public Lambda handler', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('takes its group and Redis from the environment, runs every record and lets users add middlewares', async () => {
    // Prepare
    const group = uniqueName('grp');
    const topic = uniqueName('src');
    await createTopic(topic, 1);
    await Promise.all(['5s', '1m', '10m'].map((tier) => createTopic(`${group}.retry.${tier}`, 1)));
    process.env.KAFKA_LANES_GROUP = group;
    process.env.KAFKA_LANES_REDIS_URL = REDIS_URL;
    const values: unknown[] = [];
    const handler = lanes({ concurrency: 8 }, async (record) => {
      values.push(record.value);
    });
    const seenByMiddleware: string[] = [];
    const middleware: MiddlewareObj<unknown, KafkaBatchResponse, Error, Context> = {
      before: async () => {
        seenByMiddleware.push('before');
      },
      after: async (request) => {
        seenByMiddleware.push(`after:${request.response?.batchItemFailures.length}`);
      },
    };
    handler.use(middleware);
    await produce(topic, [1, 2, 3].map((i) => ({ key: `k${i}`, value: JSON.stringify({ i }) })));
    const records = await fetchRecords(topic, 3);

    try {
      // Act
      const response = await handler(eventOf(records), contextWithin(30_000) as unknown as Context);

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(values).toEqual(expect.arrayContaining([{ i: 1 }, { i: 2 }, { i: 3 }]));
      expect(seenByMiddleware).toEqual(['before', 'after:0']);
      expect(handler.options.group).toBe(group);
    } finally {
      await handler.close();
    }
  });

  it('loads kafkajs at the first hand-off, not at cold start nor for invocations that hand nothing off', async () => {
    // Prepare: a fresh module registry that counts kafkajs' evaluations.
    const group = uniqueName('grp');
    const topic = uniqueName('src');
    await createTopic(topic, 1);
    await Promise.all(['5s', '1m', '10m'].map((tier) => createTopic(`${group}.retry.${tier}`, 1)));
    process.env.KAFKA_LANES_GROUP = group;
    process.env.KAFKA_LANES_REDIS_URL = REDIS_URL;
    await produce(topic, [{ key: 'a', value: '"ok"' }, { key: 'b', value: '"fail"' }]);
    const [ok, fail] = await fetchRecords(topic, 2);
    let kafkajsLoads = 0;
    await jest.isolateModulesAsync(async () => {
      jest.doMock('kafkajs', () => {
        kafkajsLoads += 1;
        return jest.requireActual('kafkajs');
      });
      const fresh = await import('../../src');
      const handler = fresh.lanes({}, async (record) => {
        if (record.value === 'fail') throw new Error('refused');
      });
      try {
        // Act
        const atColdStart = kafkajsLoads;
        const first = await handler(eventOf([ok!]), contextWithin(30_000) as unknown as Context);
        const withoutHandOff = kafkajsLoads;
        const second = await handler(eventOf([fail!]), contextWithin(30_000) as unknown as Context);

        // Assess
        expect([atColdStart, withoutHandOff, kafkajsLoads]).toEqual([0, 0, 1]);
        expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
        const [copy] = await fetchRecords(`${group}.retry.5s`, 1);
        expect(copy?.value?.toString()).toBe('"fail"');
      } finally {
        await handler.close();
      }
    });
  });

  it('fails at cold start on a misspelt option, naming it and what it may have meant', () => {
    process.env.KAFKA_LANES_GROUP = 'orders';
    expect(() => lanes({ concurency: 10 } as never, async () => undefined)).toThrow(ConfigError);
    expect(() => lanes({ concurency: 10 } as never, async () => undefined)).toThrow(/concurency[\s\S]*concurrency/);
  });

  it('imports without a group (a test gives it to testLanes), and fails its first invocation saying the event does not carry one', async () => {
    delete process.env.KAFKA_LANES_GROUP;
    const handler = lanes({}, async () => undefined);
    expect(() => handler.options).toThrow(/KAFKA_LANES_GROUP/);
    await expect(handler(eventOf([]), contextWithin(30_000) as unknown as Context)).rejects.toThrow(/Missing kafka-lanes option `group`.*KAFKA_LANES_GROUP.*a Kafka trigger event does not carry it/);
  });

  it('still fails at cold start on any other bad option, naming the missing group with it', () => {
    delete process.env.KAFKA_LANES_GROUP;
    expect(() => lanes({ concurrency: -1 }, async () => undefined)).toThrow(/concurrency[\s\S]*KAFKA_LANES_GROUP|KAFKA_LANES_GROUP[\s\S]*concurrency/);
  });
});
