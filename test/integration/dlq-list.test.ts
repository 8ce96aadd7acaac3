/**
 * `kafka-lanes dlq list` shows each dead letter (position, reason, error, key, origin, time) with filters, and
 * `dlq replay --position` replays that one dead letter; a dry run says what it would do and changes nothing.
 */
import type { DeadLetterRow } from '../../src/dashboard';
import { readHandOffHeaders } from '../../src/handoff';
import { runCliCaptured } from './support/cli';
import { deadLetteredLanes, OPERATOR_TIERS as TIERS } from './support/dead-lettered-lane';
import { fetchRecords, produce } from './support/kafka-events';
import { previousReleaseHeaders } from './support/previous-release';
import { KAFKA_BROKERS, REDIS_URL } from './support/stack';

jest.setTimeout(120_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const lanes = deadLetteredLanes();
afterAll(() => lanes.stop());

const BROKERS = ['--brokers', KAFKA_BROKERS.join(',')];
const CONNECTIONS = [...BROKERS, '--redis-url', REDIS_URL, '--tiers', TIERS.join(',')];

describe('kafka-lanes dlq list and dlq replay --position', () => {
  it('lists a dead letter with its reason, error, key and origin, filters, and replays that one dead letter', async () => {
    // Prepare: lane `c-1` held on its dead-lettered head (offset 0), offset 1 parked behind it.
    const s = await lanes.start({ prefix: 'dl', policy: 'hold', messages: [{ key: 'c-1', value: '{"n":0}' }, { key: 'c-1', value: '{"n":1}' }] });

    // Act: list, as JSON and as a table.
    const json = await runCliCaptured('dlq', 'list', s.group, '--json', ...BROKERS);
    const table = await runCliCaptured('dlq', 'list', s.group, ...BROKERS);

    // Assess
    expect(json.code).toBe(0);
    const listed = JSON.parse(json.out) as { total: number; rows: DeadLetterRow[] };
    expect(listed.total).toBe(1);
    expect(listed.rows[0]).toMatchObject({
      partition: 0,
      offset: 0,
      reason: 'non-retriable',
      key: 'c-1',
      lane: s.lane,
      origin: { topic: s.topic, partition: 0, offset: 0 },
      error: 'NonRetriableError: broken until fixed',
      timeMs: expect.any(Number),
    });
    expect(table.out).toMatch(new RegExp(`POSITION\\s+TIME\\s+REASON\\s+KEY\\s+ORIGIN\\s+ATTEMPT\\s+ERROR`));
    expect(table.out).toMatch(new RegExp(`\\n0@0\\s+\\S+Z\\s+non-retriable\\s+c-1\\s+${s.topic}-0@0\\s+1\\s+NonRetriableError: broken until fixed\\n`));
    expect(table.out).toContain(`1 of 1 matching dead letter(s) in ${s.group}.dlq`);

    // Filters by key, reason and time.
    const count = async (...filter: string[]): Promise<number> => (JSON.parse((await runCliCaptured('dlq', 'list', s.group, '--json', ...filter, ...BROKERS)).out) as { total: number }).total;
    expect(await count('--key', 'c-1')).toBe(1);
    expect(await count('--key', 'c-2')).toBe(0);
    expect(await count('--reason', 'non-retriable')).toBe(1);
    expect(await count('--reason', 'attempts-exhausted')).toBe(0);
    expect(await count('--since', new Date(listed.rows[0]!.timeMs + 60_000).toISOString())).toBe(0);
    expect(await count('--until', new Date(listed.rows[0]!.timeMs + 60_000).toISOString())).toBe(1);

    // A dry run of that one dead letter says what it would do and leaves the lane held.
    const dry = await runCliCaptured('dlq', 'replay', s.group, '--position', '0@0', '--dry-run', ...CONNECTIONS);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(`${s.group}.dlq 0@0 (origin ${s.topic}-0@0, key c-1, non-retriable (NonRetriableError: broken until fixed)): resumed-held-head: would resume held lane ${s.lane} in order`);
    expect(dry.out).toContain('dry run, nothing changed: 1 dead letter(s) matched of 1');
    expect(await s.redis.hget(s.lanesKey, s.lane!)).toMatch(/^0\|\d+\|held\|/);

    // A position with no dead letter is an error naming it.
    const none = await runCliCaptured('dlq', 'replay', s.group, '--position', '0@7', ...CONNECTIONS);
    expect(none.code).toBe(1);
    expect(none.err).toContain(`No dead letter at 0@7 of ${s.group}.dlq`);

    // The replay itself, without `--tiers`: the group's tiers (1s, 1m) come from its retry topics, and the lane resumes in order.
    s.fix();
    const replay = await runCliCaptured('dlq', 'replay', s.group, '--position', '0@0', ...BROKERS, '--redis-url', REDIS_URL);
    await s.drain();
    expect(replay.code).toBe(0);
    expect(replay.out).toContain(`resumed-held-head: resumed held lane ${s.lane} in order: attempt 1 in ${s.group}.retry.1s`);
    expect(s.runs).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 1 }, { offset: 1, attempt: 1 }]);
  });

  it('lists a dead letter the previous release wrote (one header per fact) as it lists one of this release', async () => {
    // Prepare: the group's dead letter, and the same dead letter as the previous release wrote it, after it.
    const s = await lanes.start({ prefix: 'dlo', policy: 'hold', messages: [{ key: 'c-1', value: '{"n":0}' }, { key: 'c-1', value: '{"n":1}' }] });
    const [letter] = await fetchRecords(`${s.group}.dlq`, 1);
    await produce(`${s.group}.dlq`, [{ key: 'c-1', value: '{"n":0}', headers: previousReleaseHeaders(readHandOffHeaders(letter!.headers ?? [])) }]);

    // Act
    const json = await runCliCaptured('dlq', 'list', s.group, '--json', ...BROKERS);

    // Assess
    expect(json.code).toBe(0);
    const listed = JSON.parse(json.out) as { total: number; rows: DeadLetterRow[] };
    const same = {
      partition: 0,
      reason: 'non-retriable',
      key: 'c-1',
      lane: s.lane,
      origin: { topic: s.topic, partition: 0, offset: 0 },
      attempt: 1,
      error: 'NonRetriableError: broken until fixed',
    };
    expect(listed.total).toBe(2);
    expect(listed.rows.map((row) => row.offset).sort()).toEqual([0, 1]);
    for (const row of listed.rows) expect(row).toMatchObject(same);
  });
});
