/**
 * `kafka-lanes dlq replay` resumes a held lane whatever its lane id is made of: a key, the partition, the shared
 * null-key lane, a `keyOf` value, a key long enough to be hashed. The copies carry their lane (`lanes-lane`);
 * a dead letter written before that header existed is matched by the engine's own derivation.
 */
import { CompletionStore } from '../../src/completion';
import type { LanesOptionsInput } from '../../src/options';
import { readDeadLetters, replayDeadLetters } from '../../src/operations/dead-letters';
import { runCliCaptured } from './support/cli';
import { deadLetteredLanes, OPERATOR_TIERS as TIERS } from './support/dead-lettered-lane';
import type { TestMessage } from './support/kafka-events';
import { createKafka, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(240_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const lanes = deadLetteredLanes();
afterAll(() => lanes.stop());

interface Mode {
  readonly name: string;
  readonly options: Partial<LanesOptionsInput>;
  /** Two records of one lane: the first fails until fixed and holds the lane, the second is parked behind it. */
  readonly messages: readonly [TestMessage, TestMessage];
  /** The lane id the engine keeps the lane under. */
  readonly lane: RegExp;
}

/** 129 bytes: its base64 is longer than a lane id may be, so the engine hashes it. */
const LONG_KEY = `customer-${'x'.repeat(120)}`;
const MODES: readonly Mode[] = [
  { name: 'key mode', options: {}, messages: [{ key: 'A', value: '{"n":0}' }, { key: 'A', value: '{"n":1}' }], lane: new RegExp(`^${Buffer.from('A').toString('base64')}$`) },
  { name: 'partition mode', options: { ordering: 'partition' }, messages: [{ key: 'A', value: '{"n":0}' }, { key: 'B', value: '{"n":1}' }], lane: /^\*$/ },
  { name: 'the shared null-key lane', options: { nullKey: 'shared' }, messages: [{ key: null, value: '{"n":0}' }, { key: null, value: '{"n":1}' }], lane: /^~$/ },
  {
    name: 'keyOf',
    options: { keyOf: (record) => (JSON.parse(record.value!.toString()) as { customer: string }).customer },
    messages: [{ key: 'k0', value: '{"n":0,"customer":"c1"}' }, { key: 'k1', value: '{"n":1,"customer":"c1"}' }],
    lane: new RegExp(`^${Buffer.from('c1').toString('base64')}$`),
  },
  { name: 'a key over 96 bytes (hashed)', options: {}, messages: [{ key: LONG_KEY, value: '{"n":0}' }, { key: LONG_KEY, value: '{"n":1}' }], lane: /^#[A-Za-z0-9_-]{43}$/ },
];

/** A group under `hold` whose lane has a dead-lettered head (offset 0) and a parked successor (offset 1). */
const heldLane = (mode: Mode) => lanes.start({ prefix: 'r', policy: 'hold', messages: mode.messages, options: mode.options });

describe.each(MODES)('dlq replay resumes a held lane: $name', (mode) => {
  it('through the CLI, reading the lane its dead letter carries', async () => {
    const s = await heldLane(mode);
    expect(s.runs.map((r) => r.offset)).toEqual([0]);
    expect(s.lane).toMatch(mode.lane);
    expect(await s.redis.hget(s.lanesKey, s.lane!)).toMatch(/^0\|\d+\|held\|/);
    s.fix();

    const { code, out } = await runCliCaptured('dlq', 'replay', s.group, '--tiers', TIERS.join(','), '--redis-url', REDIS_URL);
    await s.drain();

    expect(code).toBe(0);
    expect(out).toMatch(/resumed-held-head/);
    expect(s.runs).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 1 }, { offset: 1, attempt: 1 }]);
  });

  it('for a dead letter written without its lane header, by the lane the engine derives', async () => {
    const s = await heldLane(mode);
    s.fix();
    const consumer = createKafka().consumer({ groupId: uniqueName('rread'), maxWaitTimeInMs: 100 });
    await consumer.connect();
    const admin = createKafka().admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(`${s.group}.dlq`).finally(() => admin.disconnect());
    const letters = await readDeadLetters(consumer, `${s.group}.dlq`, ends).finally(() => consumer.disconnect());
    expect(letters.map((l) => l.lane)).toEqual([s.lane]);

    const older = letters.map((letter) => ({ ...letter, lane: undefined }));
    const actions = await replayDeadLetters({ options: s.options, store: new CompletionStore(s.redis), sink: s.writer }, older);
    await s.drain();

    expect(actions.map((a) => a.action)).toEqual(['resumed-held-head']);
    expect(s.runs).toEqual([{ offset: 0, attempt: 1 }, { offset: 0, attempt: 1 }, { offset: 1, attempt: 1 }]);
  });
});
