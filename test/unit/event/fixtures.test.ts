import { decodeKafkaEvent } from '../../../src/event';
import type { DecodedKafkaEvent, KafkaRecord } from '../../../src/event';
import { loadEventFixture } from './factories';

function recordsOf(event: DecodedKafkaEvent): KafkaRecord[] {
  return event.partitions.flatMap((batch) => batch.records);
}

describe('decodeKafkaEvent on real-shaped events', () => {
  it.each([['msk.json'], ['self-managed.json'], ['msk-two-partitions.json'], ['self-managed-schema-registry.json']])(
    'decodes %s without a failure',
    (name) => {
      // Act
      const decoded = decodeKafkaEvent(loadEventFixture(name));

      // Assess
      expect(decoded.partitions.flatMap((batch) => batch.failures)).toEqual([]);
      expect(recordsOf(decoded).length).toBeGreaterThan(0);
    },
  );

  it.each([
    ['msk.json', 'aws:kafka', true],
    ['self-managed.json', 'SelfManagedKafka', false],
  ])('decodes the AWS documentation example %s', (name, source, hasArn) => {
    // Act
    const decoded = decodeKafkaEvent(loadEventFixture(name));

    // Assess
    expect(decoded.source).toBe(source);
    expect(decoded.eventSourceArn !== undefined).toBe(hasArn);
    expect(decoded.bootstrapServers).toHaveLength(2);
    const [record] = recordsOf(decoded);
    expect(record).toMatchObject({ topic: 'mytopic', partition: 0, offset: 15, timestamp: 1545084650987, timestampType: 'CREATE_TIME' });
    expect(record?.key?.toString()).toBe('recordKey');
    expect(JSON.parse(record?.value?.toString() ?? 'null')).toEqual({ key: 'value' });
    expect(record?.headers).toEqual([{ name: 'headerKey', value: Buffer.from('headerValue') }]);
  });

  it('decodes two partitions of a topic named with `-`, absent and null keys, a tombstone and non-ASCII headers', () => {
    // Act
    const decoded = decodeKafkaEvent(loadEventFixture('msk-two-partitions.json'));

    // Assess
    expect(decoded.bootstrapServers).toHaveLength(3);
    expect(decoded.partitions.map(({ topic, partition, records }) => [topic, partition, records.map((r) => r.offset)])).toEqual([
      ['orders-eu-west', 0, [100, 101, 102]],
      ['orders-eu-west', 3, [7, 8]],
    ]);
    const [first, absentKey, tombstone, nullKey, nonAsciiName] = recordsOf(decoded);
    expect(first?.headers.map(({ name, value }) => [name, value.toString('utf8')])).toEqual([
      ['lang', 'ë'],
      ['trace', 'trace-a'],
      ['trace', 'trace-b'],
    ]);
    expect(absentKey?.key).toBeNull();
    expect(absentKey?.raw).not.toHaveProperty('key');
    expect(tombstone).toMatchObject({ value: null });
    expect(tombstone?.key?.toString()).toBe('customer-1');
    expect(nullKey).toMatchObject({ key: null, timestampType: 'LOG_APPEND_TIME' });
    expect(nonAsciiName?.headers.map(({ name, value }) => [name, value.toString('utf8')])).toEqual([['origine-città', 'Zürich']]);
  });

  it('decodes schema registry metadata', () => {
    // Act
    const [record] = recordsOf(decodeKafkaEvent(loadEventFixture('self-managed-schema-registry.json')));

    // Assess
    expect(record?.keySchemaMetadata).toEqual({ dataFormat: 'JSON', schemaId: '5' });
    expect(record?.valueSchemaMetadata).toEqual({ dataFormat: 'AVRO', schemaId: '7' });
    expect(record?.value?.subarray(0, 5)).toEqual(Buffer.from([0, 0, 0, 0, 7]));
  });
});
