import { parseTopicPartitionKey, topicPartitionKey } from '../../../src/event';

describe('topic-partition keys', () => {
  it.each([
    ['orders-0', 'orders', 0],
    ['orders-eu-west-12', 'orders-eu-west', 12],
    ['a--1', 'a-', 1],
    ['orders.v2_x-2147483647', 'orders.v2_x', 2147483647],
  ])('splits %p at its last `-`', (key, topic, partition) => {
    // Act
    const parsed = parseTopicPartitionKey(key);

    // Assess
    expect(parsed).toEqual({ topic, partition });
    expect(topicPartitionKey(topic, partition)).toBe(key);
  });

  it.each([['orders'], ['-0'], ['orders-'], ['orders-x'], ['orders-01'], ['orders-+1'], ['orders-1.0'], ['orders-2147483648']])(
    'refuses %p',
    (key) => {
      // Act
      const parsed = parseTopicPartitionKey(key);

      // Assess
      expect(parsed).toBeUndefined();
    },
  );
});
