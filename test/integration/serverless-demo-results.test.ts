/**
 * The example's recorder (functions/results.ts) writes where the framework's Redis is, as the framework reaches it:
 * deployed, the stack's ElastiCache in cluster mode. Here the local Redis Cluster stands in for it, given as the
 * plugin gives it (KAFKA_LANES_REDIS_CLUSTER_NODES), and the local single Redis as under `serverless offline`.
 */
import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { REDIS_CLUSTER_NODES, REDIS_URL } from './support/stack';

const ENV_NAMES = ['KAFKA_LANES_GROUP', 'KAFKA_LANES_REDIS_URL', 'KAFKA_LANES_REDIS_CLUSTER_NODES'] as const;
const saved = Object.fromEntries(ENV_NAMES.map((name) => [name, process.env[name]]));
afterEach(() => {
  for (const name of ENV_NAMES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  jest.resetModules();
});

let disconnect: (() => Promise<void>) | undefined;
afterEach(async () => {
  await disconnect?.();
  disconnect = undefined;
});

async function recordTwo(env: Record<string, string>, run: string): Promise<void> {
  for (const name of ENV_NAMES) delete process.env[name];
  Object.assign(process.env, env);
  // A fresh module: one connection per execution environment, made from its environment.
  const results = (await import('../../functions/results')) as typeof import('../../functions/results');
  disconnect = results.disconnectRecorder;
  await results.recordProcessed({ run, orderId: `${run}-1`, customerId: 'c-1', seq: 1, amount: 5 }, 1, 'ch_1');
  await results.recordProcessed({ run, orderId: `${run}-2`, customerId: 'c-1', seq: 2, amount: 7 }, 2, 'ch_2');
}

describe('the demo recorder', () => {
  it('records on a Redis Cluster given as the framework gives it (cluster nodes), every key of a run in one MULTI', async () => {
    // Prepare
    const run = `cluster-${randomUUID()}`;
    const cluster = new Cluster(REDIS_CLUSTER_NODES.map((node) => ({ ...node })));

    try {
      // Act
      await recordTwo({ KAFKA_LANES_GROUP: 'demo-results', KAFKA_LANES_REDIS_CLUSTER_NODES: REDIS_CLUSTER_NODES.map((node) => `${node.host}:${node.port}`).join(',') }, run);

      // Assess
      const { resultKeys } = await import('../../functions/results');
      expect(await cluster.lrange(resultKeys.customer(run, 'c-1'), 0, -1)).toEqual(['1', '2']);
      expect((await cluster.smembers(resultKeys.processed(run))).sort()).toEqual([`${run}-1`, `${run}-2`]);
      expect(await cluster.smembers(resultKeys.attempts(run))).toEqual([`${run}-2`]);
      expect(await cluster.hgetall(resultKeys.charges(run))).toEqual({ [`${run}-1`]: 'ch_1', [`${run}-2`]: 'ch_2' });
    } finally {
      cluster.disconnect();
    }
  });

  it('records on one Redis server given by URL, as under serverless offline', async () => {
    // Prepare
    const run = `server-${randomUUID()}`;
    const redis = new Redis(REDIS_URL);

    try {
      // Act
      await recordTwo({ KAFKA_LANES_GROUP: 'demo-results', KAFKA_LANES_REDIS_URL: REDIS_URL }, run);

      // Assess
      const { resultKeys } = await import('../../functions/results');
      expect(await redis.lrange(resultKeys.customer(run, 'c-1'), 0, -1)).toEqual(['1', '2']);
      expect(await redis.ttl(resultKeys.processed(run))).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  });
});
