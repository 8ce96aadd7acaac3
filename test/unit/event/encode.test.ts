import { decodeKafkaEvent, encodeKafkaEvent, encodeKafkaRecord } from '../../../src/event';
import type { EncodeKafkaEventInput, KafkaEventSource, KafkaRecordInput } from '../../../src/event';
import { MSK_ARN, SOURCES } from './factories';

function recordInput(overrides: Partial<KafkaRecordInput> = {}): KafkaRecordInput {
  return {
    topic: 'orders',
    partition: 0,
    offset: 0,
    timestamp: 1718000000000,
    key: Buffer.from('customer-1'),
    value: Buffer.from('{"id":1}'),
    headers: [],
    ...overrides,
  };
}

function eventInput(source: KafkaEventSource, records: KafkaRecordInput[], bootstrapServers?: string[]): EncodeKafkaEventInput {
  const common = { records, ...(bootstrapServers === undefined ? {} : { bootstrapServers }) };
  return source === 'aws:kafka' ? { source, eventSourceArn: MSK_ARN, ...common } : { source, ...common };
}

describe.each(SOURCES)('encodeKafkaEvent, %s', (source) => {
  it('builds the event exactly as AWS sends it', () => {
    // Prepare
    const input = eventInput(
      source,
      [recordInput({ offset: 15, headers: [{ name: 'lang', value: Buffer.from('ë') }] })],
      ['b-1.example:9092', 'b-2.example:9092'],
    );

    // Act
    const event = encodeKafkaEvent(input);

    // Assess
    expect(event).toEqual({
      eventSource: source,
      ...(source === 'aws:kafka' ? { eventSourceArn: MSK_ARN } : {}),
      bootstrapServers: 'b-1.example:9092,b-2.example:9092',
      records: {
        'orders-0': [
          {
            topic: 'orders',
            partition: 0,
            offset: 15,
            timestamp: 1718000000000,
            timestampType: 'CREATE_TIME',
            key: 'Y3VzdG9tZXItMQ==',
            value: 'eyJpZCI6MX0=',
            headers: [{ lang: [-61, -85] }],
          },
        ],
      },
    });
  });

  it('groups records by partition in the order partitions first appear, keeping the given order within one', () => {
    // Prepare
    const input = eventInput(source, [
      recordInput({ topic: 'orders-eu', partition: 1, offset: 8 }),
      recordInput({ topic: 'orders', partition: 0, offset: 3 }),
      recordInput({ topic: 'orders-eu', partition: 1, offset: 2 }),
    ]);

    // Act
    const event = encodeKafkaEvent(input);

    // Assess
    expect(Object.keys(event.records)).toEqual(['orders-eu-1', 'orders-0']);
    expect(event.records['orders-eu-1']?.map((r) => r.offset)).toEqual([8, 2]);
    expect(event.bootstrapServers).toBe('');
  });

  it('comes back equal through JSON and decodeKafkaEvent', () => {
    // Prepare
    const records = [
      recordInput({ offset: 4, timestampType: 'LOG_APPEND_TIME', headers: [{ name: 'trace', value: Buffer.from('a') }, { name: 'trace', value: Buffer.from([0x80, 0xff]) }] }),
      recordInput({ offset: 5, key: null, value: null }),
      recordInput({ topic: 'orders-eu-west', partition: 2, offset: 1, valueSchemaMetadata: { dataFormat: 'AVRO', schemaId: '7' } }),
    ];

    // Act
    const decoded = decodeKafkaEvent(JSON.parse(JSON.stringify(encodeKafkaEvent(eventInput(source, records, ['b-1:9092'])))));

    // Assess
    expect(decoded.source).toBe(source);
    expect(decoded.bootstrapServers).toEqual(['b-1:9092']);
    expect(decoded.partitions.map(({ topic, partition, failures }) => ({ topic, partition, failures }))).toEqual([
      { topic: 'orders', partition: 0, failures: [] },
      { topic: 'orders-eu-west', partition: 2, failures: [] },
    ]);
    const decodedRecords = decoded.partitions.flatMap((batch) => batch.records.map(({ raw: _raw, ...record }) => record));
    expect(decodedRecords).toEqual(records.map((record) => ({ timestampType: 'CREATE_TIME', ...record })));
  });
});

describe('encodeKafkaRecord', () => {
  it('leaves an undefined key or value out and sends null as null', () => {
    // Act
    const absent = encodeKafkaRecord(recordInput({ key: undefined, value: undefined }));
    const nulls = encodeKafkaRecord(recordInput({ key: null, value: null }));

    // Assess
    expect(absent).not.toHaveProperty('key');
    expect(absent).not.toHaveProperty('value');
    expect(nulls).toMatchObject({ key: null, value: null });
  });

  it('encodes a decoded record back to its raw JSON', () => {
    // Prepare
    const raw = encodeKafkaRecord(recordInput({ offset: 3, headers: [{ name: 'lang', value: Buffer.from('ë') }] }));
    const decoded = decodeKafkaEvent({ eventSource: 'SelfManagedKafka', records: { 'orders-0': [raw] } }).partitions[0]?.records[0];

    // Act
    const encoded = decoded === undefined ? undefined : encodeKafkaRecord(decoded);

    // Assess
    expect(encoded).toEqual(raw);
  });

  it.each([
    [{ topic: '' }, 'Expected `topic` to be a non-empty string, got `` (string)'],
    [{ partition: 1.5 }, 'Expected `partition` to be a non-negative int32, got `1.5` (number)'],
    [{ offset: 2 ** 53 }, 'Expected `offset` to be a non-negative safe integer, got `9007199254740992` (number)'],
  ])('throws a RangeError for %p', (overrides, message) => {
    // Act
    const act = () => encodeKafkaRecord(recordInput(overrides));

    // Assess
    expect(act).toThrow(RangeError);
    expect(act).toThrow(message);
  });
});
