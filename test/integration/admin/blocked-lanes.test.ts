/**
 * The blocked-lanes page the dashboard reads (`readBlockedLanes` in admin/status) on both Redis deployments:
 * sorted the oldest first, paged, parked counts per lane, and 10,000 blocked lanes read page by page through
 * the dashboard's API. Prints how long a page takes (no timing assertion: the machine is shared).
 */
import { Kafka, logLevel } from 'kafkajs';
import { applyReset, planReset, readBlockedLanes, readGroupFigures } from '../../../src/admin';
import { CompletionStore, type RedisClient } from '../../../src/completion';
import { startDashboard } from '../../../src/dashboard';
import { produce } from '../support/kafka-events';
import { createTopic, deleteTopics, KAFKA_BROKERS, redisSetups, uniqueName } from '../support/stack';

jest.setTimeout(240_000);

const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe.each(redisSetups())('blocked lanes on $name Redis', ({ name, connect }) => {
  let redis: RedisClient;
  const groups: Array<{ group: string; topic: string }> = [];

  beforeAll(() => {
    redis = connect();
  });

  afterAll(async () => {
    for (const { group, topic } of groups) await applyReset(new CompletionStore(redis), await planReset(new CompletionStore(redis), { group, topic }));
    await redis.quit();
  });

  /** `lanes` lanes blocked on partitions 0 and 1 of a new topic, one every millisecond from `since`, each with `parkedEach` parked records. */
  async function seed(lanes: number, parkedEach: number, since: number): Promise<{ group: string; topic: string }> {
    const group = uniqueName('blk');
    const topic = uniqueName('orders');
    groups.push({ group, topic });
    const store = new CompletionStore(redis);
    for (const partition of [0, 1]) {
      const ref = { group, topic, partition };
      const mine = Array.from({ length: lanes }, (_, i) => i).filter((i) => i % 2 === partition);
      const perLane = 1 + parkedEach;
      await store.admit(ref, mine.flatMap((i, n) => Array.from({ length: perLane }, (_, k) => ({ offset: n * perLane + k, lane: b64(`customer-${i}`) }))));
      for (let from = 0; from < mine.length; from += 500) {
        await Promise.all(
          mine.slice(from, from + 500).map((i, m) => {
            const n = from + m;
            const parked = Array.from({ length: parkedEach }, (_, k) => ({ offset: n * perLane + 1 + k, payload: 'p' }));
            const head = { lane: b64(`customer-${i}`), offset: n * perLane, attempt: 1 + (i % 4), state: i % 3 === 0 ? ('held' as const) : ('retrying' as const) };
            return store.block(ref, { head, parked, nowMs: since + i });
          }),
        );
      }
    }
    return { group, topic };
  }

  it('lists blocked and held lanes the oldest first, with key, head, attempt, state and parked records', async () => {
    // Prepare
    const { group, topic } = await seed(6, 2, 1_000_000);

    // Act
    const page = await readBlockedLanes({ group, store: new CompletionStore(redis), query: { limit: 4 } });
    const held = await readBlockedLanes({ group, store: new CompletionStore(redis), query: { state: 'held', sort: 'attempt', descending: true } });

    // Assess
    expect(page.total).toBe(6);
    expect(page.lanes.map((l) => l.key)).toEqual(['customer-0', 'customer-1', 'customer-2', 'customer-3']);
    expect(page.lanes[1]).toEqual({
      topic, partition: 1, lane: b64('customer-1'), key: 'customer-1', headOffset: 0, attempt: 2, state: 'retrying',
      sinceMs: 1_000_001, dueAtMs: expect.any(Number), reason: '', parked: 2,
    });
    expect(held.lanes.map((l) => [l.key, l.attempt, l.state])).toEqual([['customer-3', 4, 'held'], ['customer-0', 1, 'held']]);
  });

  it('gives the figures the alarms watch: the age of the oldest blocked lane, blocked and held lanes, committed lag', async () => {
    // Prepare: lanes blocked a minute ago (customer-0 and customer-3 held), 3 + 2 records in the topic
    const since = Date.now() - 60_000;
    const { group, topic } = await seed(4, 1, since);
    await createTopic(topic, 2);
    await produce(topic, [0, 0, 0, 1, 1].map((partition, n) => ({ key: `k${n}`, value: 'v', partition })));
    const kafka = new Kafka({ clientId: 'group-figures-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();

    try {
      // Act
      const figures = await readGroupFigures({
        group, store: new CompletionStore(redis), admin, nowMs: since + 61_000,
        partitions: [{ topic, partition: 0, committed: 1, frontier: 2 }, { topic, partition: 1, committed: undefined, frontier: 0 }],
      });

      // Assess
      expect(figures).toEqual({ oldestBlockedLaneAgeMs: 61_000, blockedLanes: 4, heldLanes: 2, committedLag: 2 + 2 });
    } finally {
      await admin.disconnect();
      await deleteTopics([topic]);
    }
  });

  it('pages through 10,000 blocked lanes through the dashboard API, each lane once', async () => {
    // Prepare
    const { group } = await seed(10_000, 0, 2_000_000);
    const kafka = new Kafka({ clientId: 'blocked-lanes-test', brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const dashboard = await startDashboard({ group, admin, store: new CompletionStore(redis), readEveryMs: 60_000, log: () => undefined });
    const token = new URL(dashboard.url).searchParams.get('token')!;
    const get = async (path: string): Promise<{ status: number; body: { total: number; lanes: Array<{ key: string }> } }> => {
      const response = await fetch(`http://127.0.0.1:${dashboard.port}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: response.status, body: (await response.json()) as { total: number; lanes: Array<{ key: string }> } };
    };

    try {
      // Act
      const keys: string[] = [];
      const times: number[] = [];
      for (let offset = 0; offset < 10_000; offset += 500) {
        const started = performance.now();
        const { status, body } = await get(`/api/lanes?offset=${offset}&limit=500`);
        times.push(performance.now() - started);
        expect({ status, total: body.total }).toEqual({ status: 200, total: 10_000 });
        keys.push(...body.lanes.map((l) => l.key));
      }
      const first = await get('/api/lanes?limit=3');

      // Assess
      expect(new Set(keys).size).toBe(10_000);
      expect(first.body.lanes.map((l) => l.key)).toEqual(['customer-0', 'customer-1', 'customer-2']);
      times.sort((a, b) => a - b);
      process.stdout.write(
        `blocked lanes (${name} Redis): a page of 500 of 10,000 lanes in median ${times[times.length >> 1]!.toFixed(0)} ms, ` +
          `slowest ${times[times.length - 1]!.toFixed(0)} ms\n`,
      );
    } finally {
      await dashboard.close();
      await admin.disconnect();
    }
  });
});
