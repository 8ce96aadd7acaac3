import { CompletionStore, type RedisClient } from '../../../src/completion';
import { planReset } from '../../../src/admin';
import { trackedPartitionsKey } from '../../../src/completion';
import { runCliCaptured } from '../support/cli';
import { REDIS_CLUSTER_NODES, REDIS_URL, redisSetups, uniqueName } from '../support/stack';

const REDIS_FLAGS = {
  standalone: ['--redis-url', REDIS_URL],
  cluster: ['--redis-cluster-nodes', REDIS_CLUSTER_NODES.map((node) => `${node.host}:${node.port}`).join(',')],
};

describe.each(redisSetups())('kafka-lanes reset on $name Redis', ({ name, connect }) => {
  let redis: RedisClient;

  beforeAll(() => {
    redis = connect();
  });

  afterAll(async () => {
    await redis.quit();
  });

  /** Offsets 0-9 of partitions 0 and 1 of `topic` done, a lane blocked on partition 0 with one parked record. */
  async function seed(group: string, topic: string): Promise<CompletionStore> {
    const store = new CompletionStore(redis);
    for (const partition of [0, 1]) {
      const ref = { group, topic, partition };
      await store.admit(ref, Array.from({ length: 10 }, (_, offset) => ({ offset })));
      await store.markDone(ref, Array.from({ length: 10 }, (_, offset) => offset));
    }
    await store.admit({ group, topic, partition: 0 }, [{ offset: 10, lane: 'x' }, { offset: 11, lane: 'x' }]);
    await store.block({ group, topic, partition: 0 }, { head: { lane: 'x', offset: 10, attempt: 2, state: 'retrying' }, parked: [{ offset: 11, payload: 'p' }] });
    return store;
  }

  it('prints what it would delete and changes nothing without --yes', async () => {
    const group = uniqueName('reset');
    const topic = uniqueName('orders');
    const store = await seed(group, topic);

    const run = await runCliCaptured('reset', group, topic, ...REDIS_FLAGS[name]);

    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.out).toContain(`Would delete the completion state of group ${group} for topic ${topic}:`);
    expect(run.out).toMatch(new RegExp(`${topic}-0: \\d+ keys \\(frontier 10, highest delivered 11, 1 blocked lanes, 0 held, 1 parked records\\)`));
    expect(run.out).toContain('1 parked records are kept nowhere else');
    expect(run.out).toContain('Run again with --yes');
    const { statuses } = await store.admit({ group, topic, partition: 1 }, [{ offset: 0 }]);
    expect(statuses).toEqual(['duplicate']);
  });

  it('with --yes deletes one partition or the whole topic, and nothing of other topics', async () => {
    // Prepare: the topic was "deleted and created again": its offsets restart at 0, which Redis says are done.
    const group = uniqueName('reset');
    const topic = uniqueName('orders');
    const other = uniqueName('other');
    const store = await seed(group, topic);
    await seed(group, other);

    // Act: one partition first
    const one = await runCliCaptured('reset', group, topic, '--partition', '1', '--yes', ...REDIS_FLAGS[name]);

    // Assess
    expect(one).toMatchObject({ code: 0, err: '' });
    expect(one.out).toContain(`Deleted the completion state of group ${group} for partition ${topic}-1:`);
    expect((await store.admit({ group, topic, partition: 1 }, [{ offset: 0 }])).statuses).toEqual(['run']);
    expect((await store.admit({ group, topic, partition: 0 }, [{ offset: 0 }])).statuses).toEqual(['duplicate']);

    // Act: the whole topic
    const all = await runCliCaptured('reset', group, topic, '--yes', ...REDIS_FLAGS[name]);

    // Assess
    expect(all.code).toBe(0);
    expect((await planReset(new CompletionStore(redis), { group, topic })).partitions).toEqual([]);
    expect(await redis.smembers(trackedPartitionsKey(group))).toEqual(expect.not.arrayContaining([`${topic}\n0`, `${topic}\n1`]));
    expect((await store.admit({ group, topic: other, partition: 0 }, [{ offset: 0 }])).statuses).toEqual(['duplicate']);
    expect((await planReset(new CompletionStore(redis), { group, topic: other })).partitions.map((p) => p.partition)).toEqual([0, 1]);
  });

  it('says so when there is nothing to reset, and rejects a bad partition', async () => {
    const nothing = await runCliCaptured('reset', uniqueName('reset'), 'orders', ...REDIS_FLAGS[name]);
    const bad = await runCliCaptured('reset', uniqueName('reset'), 'orders', '--partition', '-1', ...REDIS_FLAGS[name]);

    expect(nothing.out).toContain('nothing to reset');
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('Expected `--partition` to be a non-negative integer, got `-1`');
  });
});

describe('kafka-lanes reset --help', () => {
  it('names the hazard it is for and what is lost', async () => {
    const { out, code } = await runCliCaptured('reset', '--help');
    expect(code).toBe(0);
    const text = out.replace(/\s+/g, ' ');
    expect(text).toContain('created again under the same name');
    expect(text).toContain('Parked records exist only in Redis and are lost');
    for (const option of ['--partition', '--yes', '--redis-url', '--redis-cluster-nodes']) expect(out).toContain(option);
  });
});
