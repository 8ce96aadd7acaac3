import {
  COPY_HEADROOM_BYTES,
  formatMs,
  parseTopicRequest,
  planDerivedTopics,
  planOutputTopics,
  planSourceTopics,
  RETENTION_HEADROOM_MS,
  type TopicState,
} from '../../../src/admin';
import { ConfigError } from '../../../src/errors';

const state = (topic: string, overrides: Partial<TopicState> = {}): TopicState => ({
  topic,
  partitions: 3,
  retentionMs: 604_800_000,
  maxMessageBytes: 1_048_588,
  cleanupPolicy: 'delete',
  ...overrides,
});

describe('parseTopicRequest', () => {
  it.each([
    ['orders', { topic: 'orders' }],
    ['orders:6', { topic: 'orders', partitions: 6 }],
    ['my.orders-v2:1', { topic: 'my.orders-v2', partitions: 1 }],
  ])('reads %s', (text, expected) => {
    expect(parseTopicRequest(text)).toEqual(expected);
  });

  it.each([
    ['orders:0', 'with a positive integer of partitions, got `orders:0`'],
    ['orders:x', 'with a positive integer of partitions, got `orders:x`'],
    ['my orders:3', 'it contains ` `'],
    [':3', 'it is empty'],
  ])('rejects %s', (text, message) => {
    expect(() => parseTopicRequest(text)).toThrow(ConfigError);
    expect(() => parseTopicRequest(text)).toThrow(message);
  });
});

describe('planSourceTopics', () => {
  it('creates, grows, keeps, and refuses what Kafka cannot do', () => {
    const existing = new Map([['a', state('a')], ['b', state('b')], ['c', state('c')]]);
    const plan = planSourceTopics(
      [{ topic: 'a' }, { topic: 'b', partitions: 5 }, { topic: 'c', partitions: 2 }, { topic: 'd', partitions: 4 }, { topic: 'e' }],
      existing,
    );
    expect(plan.actions).toEqual([
      { kind: 'ok', role: 'source', topic: 'a', partitions: 3 },
      { kind: 'add-partitions', role: 'source', topic: 'b', from: 3, to: 5 },
      { kind: 'create', role: 'source', topic: 'd', partitions: 4, config: {} },
    ]);
    expect(plan.problems).toEqual([
      'Source topic `c` has 3 partitions, asked for 2: Kafka cannot remove partitions (ask for 3, or leave the count out to keep it)',
      'Source topic `e` does not exist; give `e:<partitions>` to create it',
    ]);
  });

  it('refuses a topic given twice', () => {
    expect(planSourceTopics([{ topic: 'a', partitions: 1 }, { topic: 'a' }], new Map()).problems).toEqual(['Topic `a` is given twice']);
  });
});

describe('planDerivedTopics', () => {
  const sources = [state('orders', { partitions: 6, maxMessageBytes: 2_000_000 })];

  it('creates every tier and the dead-letter topic sized for the largest source', () => {
    const plan = planDerivedTopics({ group: 'g', tiers: ['5s', '1m'], sources }, new Map());
    expect(plan.problems).toEqual([]);
    const config = { 'retention.ms': '604800000', 'max.message.bytes': String(2_000_000 + COPY_HEADROOM_BYTES), 'cleanup.policy': 'delete' };
    expect(plan.actions).toEqual([
      { kind: 'create', role: 'retry', topic: 'g.retry.5s', partitions: 6, config },
      { kind: 'create', role: 'retry', topic: 'g.retry.1m', partitions: 6, config },
      { kind: 'create', role: 'dead-letter', topic: 'g.dlq', partitions: 6, config },
    ]);
  });

  it('keeps records longer than a tier beyond the 7-day default', () => {
    const plan = planDerivedTopics({ group: 'g', tiers: ['200h'], sources }, new Map());
    const create = plan.actions[0];
    expect(create?.kind === 'create' && create.config['retention.ms']).toBe(String(200 * 3_600_000 + RETENTION_HEADROOM_MS));
  });

  it('refuses a retention asked for that is shorter than the longest tier plus the headroom', () => {
    const plan = planDerivedTopics({ group: 'g', tiers: ['10m'], sources, retentionMs: 600_000 }, new Map());
    expect(plan.problems).toEqual(['Expected a retention of at least 1h 10m (the longest retry tier, `10m`, plus 1h), got 10m']);
  });

  it('names every existing topic that would lose or refuse copies', () => {
    const existing = new Map([
      ['g.retry.5s', state('g.retry.5s', { maxMessageBytes: 1_000 })],
      ['g.retry.1m', state('g.retry.1m', { retentionMs: 60_000, maxMessageBytes: 5_000_000 })],
      ['g.dlq', state('g.dlq', { cleanupPolicy: 'compact', maxMessageBytes: 10_000_000 })],
    ]);
    const plan = planDerivedTopics({ group: 'g', tiers: ['5s', '1m'], sources }, existing);
    expect(plan.problems).toEqual([
      expect.stringMatching(/^The retry topic `g\.retry\.5s` accepts records up to 1000 bytes .* expected at least 2\d{6}$/),
      expect.stringMatching(/^The retry topic `g\.retry\.1m` keeps records 1m \(`retention.ms=60000`\): it would lose copies .* expected at least 1h 1m/),
      'The dead-letter topic `g.dlq` has `cleanup.policy=compact`: compaction keeps only the last record of each key and would drop copies; expected `delete`',
    ]);
  });

  it('accepts unlimited retention', () => {
    const existing = new Map([['g.retry.1m', state('g.retry.1m', { retentionMs: -1, maxMessageBytes: 5_000_000 })]]);
    expect(planDerivedTopics({ group: 'g', tiers: ['1m'], sources }, existing).problems).toEqual([]);
  });
});

describe('formatMs', () => {
  it.each([
    [604_800_000, '7d'],
    [4_200_000, '1h 10m'],
    [1_500, '1s 500ms'],
    [0, '0ms'],
    [-1, 'forever'],
  ])('%d -> %s', (ms, text) => {
    expect(formatMs(ms)).toBe(text);
  });
});

describe('planOutputTopics', () => {
  it('creates a missing output with the partitions asked for or the default, and leaves an existing one as it is', () => {
    const plan = planOutputTopics([{ topic: 'shipments' }, { topic: 'invoices', partitions: 2 }, { topic: 'audit' }], new Map([['audit', state('audit', { partitions: 12 })]]), 6);
    expect(plan).toEqual({
      actions: [
        { kind: 'create', role: 'output', topic: 'shipments', partitions: 6, config: {} },
        { kind: 'create', role: 'output', topic: 'invoices', partitions: 2, config: {} },
        { kind: 'ok', role: 'output', topic: 'audit', partitions: 12 },
      ],
      problems: [],
    });
  });

  it('names an output given twice', () => {
    expect(planOutputTopics([{ topic: 'shipments' }, { topic: 'shipments' }], new Map(), 1).problems).toEqual(['Output topic `shipments` is given twice']);
  });

  it('reads `--output name[:partitions]`, naming the flag in its message', () => {
    expect(parseTopicRequest('shipments:4', '--output')).toEqual({ topic: 'shipments', partitions: 4 });
    expect(() => parseTopicRequest('shipments:0', '--output')).toThrow('Expected `--output <name>[:<partitions>]` with a positive integer of partitions, got `shipments:0`');
  });
});
