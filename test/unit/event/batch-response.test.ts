import { batchItemFailures, decodeKafkaEvent } from '../../../src/event';
import { awsEvent, awsRecord } from './factories';

describe('batchItemFailures', () => {
  it('builds the Kafka partial batch response with an object identifier', () => {
    // Prepare
    const items = [
      { topic: 'orders-eu', partition: 3, offset: 42 },
      { topic: 'payments', partition: 0, offset: 7 },
    ];

    // Act
    const response = batchItemFailures(items);

    // Assess
    expect(JSON.stringify(response)).toBe(
      '{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-eu-3","offset":42}},{"itemIdentifier":{"partition":"payments-0","offset":7}}]}',
    );
  });

  it('reports success as an empty list', () => {
    // Act
    const response = batchItemFailures([]);

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
  });

  it('drops repeated records and keeps the given order', () => {
    // Prepare
    const items = [
      { topic: 'orders', partition: 0, offset: 9 },
      { topic: 'orders', partition: 0, offset: 2 },
      { topic: 'orders', partition: 0, offset: 9 },
    ];

    // Act
    const response = batchItemFailures(items);

    // Assess
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier.offset)).toEqual([9, 2]);
  });

  it('takes decoded records and decode failures directly', () => {
    // Prepare
    const event = decodeKafkaEvent(
      awsEvent('aws:kafka', { 'orders-eu-1': [awsRecord({ topic: 'orders-eu', partition: 1, offset: 5 }), awsRecord({ topic: 'x', partition: 1, offset: 6 })] }),
    );
    const [batch] = event.partitions;
    const failed = [...(batch?.records ?? []), ...(batch?.failures ?? [])].flatMap((item) =>
      item.offset === undefined ? [] : [{ topic: item.topic, partition: item.partition, offset: item.offset }],
    );

    // Act
    const response = batchItemFailures(failed);

    // Assess
    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: { partition: 'orders-eu-1', offset: 5 } },
      { itemIdentifier: { partition: 'orders-eu-1', offset: 6 } },
    ]);
  });

  it.each([
    [{ topic: 'orders', partition: 0, offset: 2 ** 53 }, 'Expected `offset` to be a non-negative safe integer, got `9007199254740992` (number)'],
    [{ topic: 'orders', partition: -1, offset: 0 }, 'Expected `partition` to be a non-negative int32, got `-1` (number)'],
  ])('throws a RangeError for %p', (item, message) => {
    // Act
    const act = () => batchItemFailures([item]);

    // Assess
    expect(act).toThrow(RangeError);
    expect(act).toThrow(message);
  });
});
