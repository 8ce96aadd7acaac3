import { Redis } from 'ioredis';
import {
  assertHistories,
  DEAD_BEFORE_DEAD_LETTER,
  HELD_BEFORE_DEAD_LETTER,
  REDRIVEN_HEAD,
  TWIN_COPIES,
  type HistoryCase,
  type HistoryStats,
} from '../support/history-rig';
import { runOnRedis } from '../support/history-redis';
import { REDIS_URL } from './support/stack';

/**
 * Randomized histories (test/support/history-rig.ts) on the real Redis completion store: the real admit, mark,
 * block, release, advance and frontier scripts, and the real committer run (`runCommitter`, with its lease, its
 * trim and its readings) committing to an in-memory completion group. Retry and dead-letter copies go to the
 * history's own logs, as the engine's `HandOffSink` port allows: the broker adds nothing the histories check.
 */
jest.setTimeout(240_000);

type Counter = keyof HistoryStats;

const cases: Array<HistoryCase & { name: string; reached: Counter[] }> = [
  {
    name: 'key mode, two partitions',
    shape: { orderings: ['key'], partitions: 2, maxRecords: 6, maxSteps: 10 },
    runs: 120,
    seed: 2_101,
    reached: ['crashes', 'copyRuns', 'drainedRuns', 'deadLetters', 'redeliveredRuns', 'refused', 'operatorReleases'],
  },
  {
    name: 'key mode, one hot key',
    shape: { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a'] },
    runs: 60,
    seed: 2_151,
    reached: ['crashes', 'copyRuns', 'drainedRuns', 'deadLetters', 'refused', 'redriven'],
    examples: [REDRIVEN_HEAD],
  },
  {
    name: 'partition mode',
    shape: { orderings: ['partition'], partitions: 1, maxRecords: 6, maxSteps: 10 },
    runs: 60,
    seed: 2_202,
    reached: ['crashes', 'copyRuns', 'drainedRuns', 'deadLetters', 'refused'],
  },
  {
    name: 'unordered mode',
    shape: { orderings: ['unordered'], partitions: 1, maxRecords: 6, maxSteps: 10 },
    runs: 60,
    seed: 2_303,
    reached: ['crashes', 'copyRuns', 'deadLetters', 'refused'],
  },
];

describe('engine histories on the real Redis completion store', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  });
  afterAll(async () => {
    await redis.quit();
  });

  it.each(cases)('$name: $runs histories keep G1, G2, G4, G7 and lane order', async (c) => {
    const { reached } = c;
    const stats = await assertHistories(c, (spec) => runOnRedis(redis, spec));
    // The histories reach what the checks are about (see the unit tests).
    expect(Object.fromEntries(reached.map((counter) => [counter, stats[counter] > 0]))).toEqual(Object.fromEntries(reached.map((counter) => [counter, true])));
  });

  // Regressions, on the real scripts too (see test/unit/engine/histories.property.test.ts): a held lane blocked
  // before its dead-letter write, so a crash then an operator's release lost the record.
  it('loses no held head when the processor dies around its dead-letter write and an operator releases the lane', async () => {
    await runOnRedis(redis, HELD_BEFORE_DEAD_LETTER);
    await runOnRedis(redis, DEAD_BEFORE_DEAD_LETTER);
  });

  // The head check was a read: two copies of one head with the same attempt, in two tiers delivered at once, both
  // ran. It is a claim now (`claim-1.lua`).
  it('runs one of two copies of a lane head delivered at once from two tiers', async () => {
    // Handlers that take 20 ms: both claims (Redis round trips) surely come before either run ends.
    await runOnRedis(redis, TWIN_COPIES, { handlerMs: 20 });
  });
});
