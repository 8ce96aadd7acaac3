import { ConfigError } from '../../../src/errors';
import { deadLetterTopic, retryTopic, retryTopicFor, retryTopics, tierFor, topicNameProblem } from '../../../src/options';

const TIERS = ['5s', '1m', '10m'] as const;

describe('retry and dead-letter topic names', () => {
  it('names one retry topic per tier, in tier order, with its delay', () => {
    // Act
    const topics = retryTopics('orders-svc', TIERS);

    // Assess
    expect(topics).toEqual([
      { tier: '5s', topic: 'orders-svc.retry.5s', delayMs: 5_000 },
      { tier: '1m', topic: 'orders-svc.retry.1m', delayMs: 60_000 },
      { tier: '10m', topic: 'orders-svc.retry.10m', delayMs: 600_000 },
    ]);
  });

  it('names the retry topic of one tier and the dead-letter topic', () => {
    // Act
    const retry = retryTopic('orders-svc', '1m');
    const dlq = deadLetterTopic('orders-svc');

    // Assess
    expect(retry).toBe('orders-svc.retry.1m');
    expect(dlq).toBe('orders-svc.dlq');
  });

  it('rejects a tier that is not a duration', () => {
    // Act
    const act = (): unknown => retryTopics('orders-svc', ['5s', 'soon']);

    // Assess
    expect(act).toThrow(ConfigError);
    expect(act).toThrow('Invalid duration `soon` (string)');
  });
});

describe('tierFor', () => {
  it.each([
    [Number.NEGATIVE_INFINITY, '5s'],
    [-1, '5s'],
    [0, '5s'],
    [4_999, '5s'],
    [5_000, '5s'],
    [30_000, '5s'],
    [59_999, '5s'],
    [60_000, '1m'],
    [599_999, '1m'],
    [600_000, '10m'],
    [3_600_000, '10m'],
    [Number.POSITIVE_INFINITY, '10m'],
  ])('sends a record due in %p ms to tier %p', (delayMs, tier) => {
    // Act
    const chosen = tierFor(delayMs, TIERS);

    // Assess
    expect(chosen).toBe(tier);
  });

  it('picks the same tier when the tiers are not in order', () => {
    // Prepare
    const shuffled = ['10m', '5s', '1m'];

    // Act
    const chosen = [0, 30_000, 90_000, 900_000].map((delayMs) => tierFor(delayMs, shuffled));

    // Assess
    expect(chosen).toEqual(['5s', '5s', '1m', '10m']);
  });

  it('uses the only tier for every delay', () => {
    // Act
    const chosen = [0, 1_000, 10_000_000].map((delayMs) => tierFor(delayMs, ['30s']));

    // Assess
    expect(chosen).toEqual(['30s', '30s', '30s']);
  });

  it.each([
    ['no tiers', 1_000, []],
    ['a NaN delay', Number.NaN, TIERS],
  ])('throws a RangeError for %s', (_case, delayMs, tiers) => {
    // Act
    const act = (): string => tierFor(delayMs, tiers);

    // Assess
    expect(act).toThrow(RangeError);
  });

  it('gives the retry topic of the tier', () => {
    // Act
    const topic = retryTopicFor('orders-svc', TIERS, 90_000);

    // Assess
    expect(topic).toBe('orders-svc.retry.1m');
  });
});

describe('topicNameProblem', () => {
  it.each([['orders'], ['orders-svc.retry.5s'], ['a_b.C-9'], ['x'.repeat(249)]])('accepts %p', (name) => {
    // Act
    const problem = topicNameProblem(name);

    // Assess
    expect(problem).toBeUndefined();
  });

  it.each([
    ['', 'it is empty'],
    ['.', '`.` is reserved'],
    ['..', '`..` is reserved'],
    ['my orders!', 'it contains ` `, `!`'],
    ['orders/eu', 'it contains `/`'],
    ['x'.repeat(250), 'it has 250 characters; Kafka topic names have at most 249'],
  ])('rejects %p: %s', (name, reason) => {
    // Act
    const problem = topicNameProblem(name);

    // Assess
    expect(problem).toContain(reason);
  });
});
