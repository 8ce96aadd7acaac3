import { readHandOffHeaders } from '../../src/handoff';
import { runCliCaptured } from './support/cli';
import { deadLetteredLanes, OPERATOR_TIERS as TIERS } from './support/dead-lettered-lane';
import { fetchRecords } from './support/kafka-events';
import { REDIS_URL } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const laneA = Buffer.from('A').toString('base64');
const lanes = deadLetteredLanes();
afterAll(() => lanes.stop());

/** A group whose lane A has a dead-lettered head (offset 0) and a parked successor (offset 1). */
const deadLetteredHead = (policy: 'release' | 'hold') =>
  lanes.start({ prefix: 'o', policy, messages: [{ key: 'A', value: '{"n":0}', headers: { trace: 't0' } }, { key: 'A', value: '{"n":1}' }] });

describe('operator commands on a real broker and Redis', () => {
  it('lane release skips a held head and resumes its lane in order', async () => {
    const s = await deadLetteredHead('hold');
    expect(s.runs.map((r) => r.offset)).toEqual([0]);

    const { code, out } = await runCliCaptured('lane', 'release', s.group, s.topic, '0', laneA, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.feed.feedUntil((event, context) => s.processor.process(event, context), () => s.runs.some((r) => r.offset === 1));

    expect(code).toBe(0);
    expect(out).toMatch(/held head offset 0 skipped/);
    expect(s.runs.map((r) => r.offset)).toEqual([0, 1]);
    expect(await s.lanesFree()).toBe(true);
  });

  it('lane release refuses a lane that is not held, changing nothing', async () => {
    const s = await deadLetteredHead('release');
    const { code, err } = await runCliCaptured('lane', 'release', s.group, s.topic, '0', laneA, '--redis-url', REDIS_URL);
    expect(code).toBe(1);
    expect(err).toMatch(/is not blocked/);
  });

  it('dlq replay resumes a held head in order as attempt 1', async () => {
    const s = await deadLetteredHead('hold');
    s.fix();

    const dry = await runCliCaptured('dlq', 'replay', s.group, '--dry-run', '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    expect(dry.out).toMatch(/resumed-held-head/);
    expect(dry.out).toMatch(/dry run, nothing changed: 1 dead letter\(s\) matched of 1/);
    expect(await s.redis.hget(s.lanesKey, laneA)).toMatch(/\|held\|/);

    const { code, out } = await runCliCaptured('dlq', 'replay', s.group, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.drain();

    expect(code).toBe(0);
    expect(out).toMatch(/resumed-held-head/);
    expect(s.runs).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 1 }, { offset: 1, attempt: 1 }]);
  });

  it('dlq replay writes a released dead letter back to its origin topic with lanes-replay-of', async () => {
    const s = await deadLetteredHead('release');
    expect(s.runs.map((r) => r.offset)).toEqual([0, 1]);

    const dry = await runCliCaptured('dlq', 'replay', s.group, '--origin-topic', s.topic, '--dry-run', '--redis-url', REDIS_URL);
    expect(dry.out).toMatch(/written-back/);
    const { code } = await runCliCaptured('dlq', 'replay', s.group, '--origin-topic', s.topic, '--lane', laneA, '--since', new Date(Date.now() - 600_000).toISOString(), '--redis-url', REDIS_URL);

    expect(code).toBe(0);
    const all = await fetchRecords(s.topic, 3);
    const replayed = all[2]!;
    expect(replayed.value?.toString()).toBe('{"n":0}');
    const headers = new Map((replayed.headers ?? []).map((h) => [h.name, Buffer.from(h.value).toString()]));
    expect(headers.get('lanes-replay-of')).toBe(`${s.group}.dlq/0/0`);
    expect(headers.get('trace')).toBe('t0');
    expect(readHandOffHeaders(replayed.headers ?? []).kind).toBeUndefined();
  });
});
