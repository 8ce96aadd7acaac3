import { handOffMessage } from '../../../src/handoff/headers';
import { retryTierOf, completionGroupId, deadLetterTopic, retryTopic, groupTag, partitionTagOf } from '../../../src/options/names';
import { copyFacts } from '../../../src/retry/retry-path';
import { kafkaRecord } from '../../support/records';

const TIERS = ['5s', '1m'];

function copy(headers: Record<string, string>, topic = 'orders.retry.5s') {
  return kafkaRecord({ topic, headers: Object.entries(headers).map(([name, value]) => ({ name, value: Buffer.from(value) })) });
}

describe('copyFacts: what a retry copy says about itself', () => {
  it('reads origin, attempt, due time and error of a copy the writer made', () => {
    const original = kafkaRecord({ topic: 'orders', partition: 3, offset: 41 });
    const message = handOffMessage({
      record: original, origin: { topic: 'orders', partition: 3, offset: 41 }, kind: 'retry', topic: 'orders.retry.5s',
      attempt: 2, dueAtMs: 1_000, firstFailureAtMs: 900, error: { name: 'Error', message: 'boom' },
    });
    const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]));

    expect(copyFacts(copy(headers), TIERS, 'orders')).toEqual({
      origin: { topic: 'orders', partition: 3, offset: 41 }, attempt: 2, dueAtMs: 1_000, firstFailureAtMs: 900,
      error: { name: 'Error', message: 'boom' }, deferred: false,
    });
  });

  it.each([
    [{}, /without a `lanes-copy` header/],
    [{ 'lanes-copy': '{"originTopic":"orders","originPartition":0,"originOffset":1,"attempt":"two","dueAtMs":5,"kind":"retry"}' }, /^retry copy whose `lanes-copy` header has no valid `attempt`$/],
    [{ 'lanes-copy': 'not json' }, /has no valid `originTopic`, `originPartition`, `originOffset`, `attempt`, `dueAtMs`/],
    [{ 'lanes-copy': '{"originTopic":"orders","originPartition":0,"originOffset":1,"attempt":2,"dueAtMs":5,"kind":"dead-letter"}' }, /`lanes-copy` kind is not `retry`/],
  ])('says what is wrong with a malformed copy %#', (headers, reason) => {
    expect(copyFacts(copy(headers), TIERS, 'orders')).toMatch(reason);
  });

  it('reads a copy the previous release wrote (one header per fact)', () => {
    const legacy = {
      'lanes-origin-topic': 'orders', 'lanes-origin-partition': '3', 'lanes-origin-offset': '41', 'lanes-origin-timestamp': '1',
      'lanes-lane': 'Y3VzdG9tZXItMQ==', 'lanes-kind': 'retry', 'lanes-attempt': '2', 'lanes-due-at': '1000', 'lanes-first-failure-at': '900',
      'lanes-error-class': 'Error', 'lanes-error-message': 'boom', 'lanes-deferred': 'true',
    };
    expect(copyFacts(copy(legacy), TIERS, 'orders')).toEqual({
      origin: { topic: 'orders', partition: 3, offset: 41 }, attempt: 2, dueAtMs: 1_000, firstFailureAtMs: 900,
      error: { name: 'Error', message: 'boom' }, deferred: true,
    });
  });

  it.each([
    [{ 'lanes-origin-topic': 'orders' }, /without valid `lanes-origin-partition`, `lanes-origin-offset`, `lanes-attempt`, `lanes-due-at`/],
    [{ 'lanes-origin-topic': 'orders', 'lanes-origin-partition': '0', 'lanes-origin-offset': '1', 'lanes-attempt': 'two', 'lanes-due-at': '5' }, /`lanes-attempt`/],
    [{ 'lanes-origin-topic': 'orders', 'lanes-origin-partition': '0', 'lanes-origin-offset': '1', 'lanes-attempt': '2', 'lanes-due-at': '5', 'lanes-kind': 'dead-letter' }, /`lanes-kind` is not `retry`/],
  ])('names the headers of the previous release in what is wrong with a copy it wrote %#', (headers, reason) => {
    expect(copyFacts(copy(headers), TIERS, 'orders')).toMatch(reason);
  });

  it('refuses a topic that is not one of the configured tiers', () => {
    expect(copyFacts(copy({}, 'orders.retry.7s'), TIERS, 'orders')).toMatch(/unknown retry tier `7s`/);
  });
});

describe('names derived from the group', () => {
  it('derives every topic, group and tag from the group', () => {
    expect(retryTopic('orders', '5s')).toBe('orders.retry.5s');
    expect(retryTierOf('orders', 'orders.retry.5s')).toBe('5s');
    expect(retryTierOf('orders', 'orders.retry.')).toBeUndefined();
    expect(retryTierOf('orders', 'orders')).toBeUndefined();
    expect(deadLetterTopic('orders')).toBe('orders.dlq');
    expect(completionGroupId('orders')).toBe('orders.lanes');
    expect(groupTag('a:b')).toBe('{kl:a%3Ab}');
    expect(partitionTagOf('a', 'b{c}', 2)).toBe('{kl:a:b%7Bc%7D:2}');
  });
});
