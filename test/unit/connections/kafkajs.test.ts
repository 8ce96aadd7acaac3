import * as kafkajs from 'kafkajs';
import { createKafkaClient, importKafkaJs, type KafkaClient } from '../../../src/connections';

describe('importKafkaJs', () => {
  it('gives the kafkajs module, the same object on every call', async () => {
    // Act
    const imported = await importKafkaJs();

    // Assess
    expect(imported.Kafka).toBe(kafkajs.Kafka);
    expect(await importKafkaJs()).toBe(imported);
  });
});

describe('createKafkaClient', () => {
  it('makes the seam\'s client with kafkajs: its producer, admin and consumer, none connected', async () => {
    // Act
    const client: KafkaClient = await createKafkaClient({ clientId: 'seam', brokers: ['127.0.0.1:1'], logLevel: kafkajs.logLevel.NOTHING });

    // Assess: kafkajs's own client fills the seam as it stands, so every caller of kafkajs keeps working.
    expect(client).toBeInstanceOf(kafkajs.Kafka);
    const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 });
    expect([typeof producer.connect, typeof producer.sendBatch, typeof producer.disconnect]).toEqual(['function', 'function', 'function']);
    expect(typeof client.admin().fetchTopicOffsets).toBe('function');
    expect(typeof client.consumer({ groupId: 'seam' }).run).toBe('function');
  });
});

// The lazy-loading contract of a cold start: importing the public entry and calling `lanes(...)` (what a handler
// module does at load) evaluates none of the packages below. kafkajs and the hand-off writer load at the first
// hand-off, ioredis and Powertools at the first invocation, the AWS SDK and the MSK signer only with MSK, and classic
// zod never (the option schema uses zod/mini).
const LAZY = [
  'kafkajs',
  'ioredis',
  '@aws-lambda-powertools/logger',
  '@aws-lambda-powertools/metrics',
  '@aws-sdk/client-kafka',
  'aws-msk-iam-sasl-signer-js',
  'zod',
] as const;

describe('what a cold start evaluates', () => {
  it('loads none of the lazy packages at import and `lanes(...)`, and each once when first needed', async () => {
    const loads = new Map<string, number>();
    await jest.isolateModulesAsync(async () => {
      // Prepare: count each package's evaluation in a fresh module registry.
      for (const name of LAZY) {
        jest.doMock(name, () => {
          loads.set(name, (loads.get(name) ?? 0) + 1);
          return jest.requireActual(name);
        });
      }

      // Act
      const entry = await import('../../../src');
      const handler = entry.lanes({ group: 'cold-start', redis: { url: 'redis://127.0.0.1:1' } }, async () => {});
      const atLoad = new Map(loads);
      const connections = await import('../../../src/connections');
      const telemetry = await import('../../../src/telemetry');
      await Promise.all([connections.importKafkaJs(), connections.importKafkaJs(), connections.importIoRedis(), telemetry.importTelemetry('cold-start')]);
      const kafka = await connections.importKafkaJs();

      // Assess
      expect(typeof handler).toBe('function');
      expect(atLoad).toEqual(new Map());
      expect(loads).toEqual(
        new Map([
          ['kafkajs', 1],
          ['ioredis', 1],
          ['@aws-lambda-powertools/logger', 1],
          ['@aws-lambda-powertools/metrics', 1],
        ]),
      );
      expect(loads.has('zod')).toBe(false);
      expect(typeof kafka.Kafka).toBe('function');
    });
  });
});
