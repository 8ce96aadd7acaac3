import { LanesError } from '../../../src/errors';
import { decodeKafkaEvent, decodeKafkaEventLazily, EventDecodeError } from '../../../src/event';
import type { DecodeFailure, KafkaRecord, LazyPartitionBatch, PartitionBatch } from '../../../src/event';
import { awsEvent, awsRecord, awsRecordWithout, base64, MSK_ARN, SOURCES } from './factories';

function onlyPartition(partitions: readonly PartitionBatch[]): PartitionBatch {
  expect(partitions).toHaveLength(1);
  return partitions[0] as PartitionBatch;
}

describe.each(SOURCES)('decodeKafkaEvent, %s', (source) => {
  function decodeOne(raw: unknown, key = 'orders-0'): { records: KafkaRecord[]; failures: DecodeFailure[] } {
    return onlyPartition(decodeKafkaEvent(awsEvent(source, { [key]: [raw] })).partitions);
  }

  function failureOf(raw: unknown, key = 'orders-0'): DecodeFailure {
    const { records, failures } = decodeOne(raw, key);
    expect(records).toEqual([]);
    expect(failures).toHaveLength(1);
    return failures[0] as DecodeFailure;
  }

  describe('a well-formed event', () => {
    it('decodes the event source, the ARN of MSK only, and splits the bootstrap servers', () => {
      // Prepare
      const event = awsEvent(source, { 'orders-0': [awsRecord()] }, { bootstrapServers: 'b-1.example:9092, b-2.example:9092' });

      // Act
      const decoded = decodeKafkaEvent(event);

      // Assess
      expect(decoded.source).toBe(source);
      expect(decoded.eventSourceArn).toBe(source === 'aws:kafka' ? MSK_ARN : undefined);
      expect(decoded.bootstrapServers).toEqual(['b-1.example:9092', 'b-2.example:9092']);
    });

    it('decodes a null eventSourceArn as none', () => {
      // Act
      const decoded = decodeKafkaEvent(awsEvent(source, {}, { eventSourceArn: null }));

      // Assess
      expect(decoded).not.toHaveProperty('eventSourceArn');
    });

    it.each([[undefined], [null], ['']])('decodes bootstrapServers %p to no servers', (bootstrapServers) => {
      // Prepare
      const event = awsEvent(source, { 'orders-0': [awsRecord()] }, { bootstrapServers });

      // Act
      const decoded = decodeKafkaEvent(event);

      // Assess
      expect(decoded.bootstrapServers).toEqual([]);
    });

    it('decodes every field of a record and keeps the record JSON as received', () => {
      // Prepare
      const raw = awsRecord({
        offset: 15,
        timestamp: 1545084650987,
        timestampType: 'LOG_APPEND_TIME',
        key: base64('recordKey'),
        value: base64('{"key":"value"}'),
        headers: [{ headerKey: [104, 101, 97, 100, 101, 114, 86, 97, 108, 117, 101] }],
      });

      // Act
      const { records, failures } = decodeOne(raw);

      // Assess
      expect(failures).toEqual([]);
      expect(records).toEqual([
        {
          topic: 'orders',
          partition: 0,
          offset: 15,
          timestamp: 1545084650987,
          timestampType: 'LOG_APPEND_TIME',
          key: Buffer.from('recordKey'),
          value: Buffer.from('{"key":"value"}'),
          headers: [{ name: 'headerKey', value: Buffer.from('headerValue') }],
          raw,
        },
      ]);
      expect(records[0]?.raw).toBe(raw);
    });

    it('decodes the signed bytes [-61, -85] of a header to the bytes of ë', () => {
      // Prepare
      const raw = awsRecord({ headers: [{ lang: [-61, -85] }] });

      // Act
      const { records } = decodeOne(raw);

      // Assess
      expect(records[0]?.headers).toEqual([{ name: 'lang', value: Buffer.from([0xc3, 0xab]) }]);
      expect(records[0]?.headers[0]?.value.toString('utf8')).toBe('ë');
    });

    it('keeps duplicate header names, in order', () => {
      // Prepare
      const raw = awsRecord({ headers: [{ trace: [97] }, { other: [] }, { trace: [98] }] });

      // Act
      const { records } = decodeOne(raw);

      // Assess
      expect(records[0]?.headers).toEqual([
        { name: 'trace', value: Buffer.from('a') },
        { name: 'other', value: Buffer.alloc(0) },
        { name: 'trace', value: Buffer.from('b') },
      ]);
    });

    it.each([[undefined], [null]])('decodes headers %p to no headers', (headers) => {
      // Act
      const { records } = decodeOne(awsRecord({ headers }));

      // Assess
      expect(records[0]?.headers).toEqual([]);
    });

    it.each([
      ['absent', awsRecordWithout('key'), null],
      ['null', awsRecord({ key: null }), null],
      ['empty', awsRecord({ key: '' }), Buffer.alloc(0)],
    ])('decodes a key that is %s', (_case, raw, key) => {
      // Act
      const { records } = decodeOne(raw);

      // Assess
      expect(records[0]?.key).toEqual(key);
      expect(records[0]?.value).toEqual(Buffer.from('{"id":1}'));
    });

    it.each([
      ['absent', awsRecordWithout('value'), null],
      ['null (a tombstone)', awsRecord({ value: null }), null],
      ['empty', awsRecord({ value: '' }), Buffer.alloc(0)],
    ])('decodes a value that is %s', (_case, raw, value) => {
      // Act
      const { records } = decodeOne(raw);

      // Assess
      expect(records[0]?.value).toEqual(value);
      expect(records[0]?.key).toEqual(Buffer.from('customer-1'));
    });

    it('splits a records key at its last `-`', () => {
      // Prepare
      const raw = awsRecord({ topic: 'orders-eu-west-1', partition: 12 });

      // Act
      const decoded = decodeKafkaEvent(awsEvent(source, { 'orders-eu-west-1-12': [raw] }));

      // Assess
      const batch = onlyPartition(decoded.partitions);
      expect(batch).toMatchObject({ topic: 'orders-eu-west-1', partition: 12, failures: [] });
      expect(batch.records).toHaveLength(1);
    });

    it('decodes several partitions of several topics, in the order of their keys', () => {
      // Prepare
      const event = awsEvent(source, {
        'orders-1': [awsRecord({ partition: 1, offset: 5 })],
        'payments-0': [awsRecord({ topic: 'payments', offset: 9 }), awsRecord({ topic: 'payments', offset: 10 })],
        'orders-0': [awsRecord({ offset: 7 })],
      });

      // Act
      const decoded = decodeKafkaEvent(event);

      // Assess
      expect(decoded.partitions.map(({ topic, partition, records }) => [topic, partition, records.map((r) => r.offset)])).toEqual([
        ['orders', 1, [5]],
        ['payments', 0, [9, 10]],
        ['orders', 0, [7]],
      ]);
    });

    it('sorts the records of a partition by offset', () => {
      // Prepare
      const event = awsEvent(source, { 'orders-0': [awsRecord({ offset: 12 }), awsRecord({ offset: 3 }), awsRecord({ offset: 7 })] });

      // Act
      const decoded = decodeKafkaEvent(event);

      // Assess
      expect(onlyPartition(decoded.partitions).records.map((r) => r.offset)).toEqual([3, 7, 12]);
    });

    it('decodes schema metadata when present', () => {
      // Prepare
      const raw = awsRecord({
        keySchemaMetadata: { dataFormat: 'JSON', schemaId: 'key-schema-1' },
        valueSchemaMetadata: { dataFormat: 'AVRO' },
      });

      // Act
      const { records } = decodeOne(raw);

      // Assess
      expect(records[0]?.keySchemaMetadata).toEqual({ dataFormat: 'JSON', schemaId: 'key-schema-1' });
      expect(records[0]?.valueSchemaMetadata).toEqual({ dataFormat: 'AVRO' });
    });

    it('leaves schema metadata out when absent or null', () => {
      // Act
      const { records } = decodeOne(awsRecord({ valueSchemaMetadata: null }));

      // Assess
      expect(records[0]).not.toHaveProperty('keySchemaMetadata');
      expect(records[0]).not.toHaveProperty('valueSchemaMetadata');
    });

    it('decodes an event without records to no partitions', () => {
      // Act
      const decoded = decodeKafkaEvent(awsEvent(source, {}));

      // Assess
      expect(decoded.partitions).toEqual([]);
    });
  });

  describe('a malformed record', () => {
    it('becomes a failure naming the record when its offset is not a safe integer, and the rest decodes', () => {
      // Prepare
      const bad = awsRecord({ offset: 1e300 });
      const event = awsEvent(source, { 'orders-0': [awsRecord({ offset: 1 }), bad, awsRecord({ offset: 2 })] });

      // Act
      const decoded = decodeKafkaEvent(event);

      // Assess
      const batch = onlyPartition(decoded.partitions);
      expect(batch.records.map((r) => r.offset)).toEqual([1, 2]);
      expect(batch.failures).toEqual([
        {
          topic: 'orders',
          partition: 0,
          offset: undefined,
          index: 1,
          field: 'offset',
          reason: 'Expected `offset` to be a non-negative safe integer, got `1e+300` (number)',
          message:
            'Cannot decode record 1 of `orders-0` (offset unknown): Expected `offset` to be a non-negative safe integer, got `1e+300` (number)',
          raw: bad,
        },
      ]);
      expect(batch.failures[0]?.raw).toBe(bad);
    });

    it.each([[2 ** 53], [Number.MAX_SAFE_INTEGER + 2], [-1], [1.5], ['15'], [null]])('rejects the offset %p', (offset) => {
      // Act
      const failure = failureOf(awsRecord({ offset }));

      // Assess
      expect(failure).toMatchObject({ field: 'offset', offset: undefined });
      expect(failure.reason).toMatch(/^Expected `offset` to be a non-negative safe integer, got /);
    });

    it('accepts the largest safe offset', () => {
      // Act
      const { records } = decodeOne(awsRecord({ offset: Number.MAX_SAFE_INTEGER }));

      // Assess
      expect(records[0]?.offset).toBe(Number.MAX_SAFE_INTEGER);
    });

    it.each(['topic', 'partition', 'offset', 'timestamp', 'timestampType'])('becomes a failure when `%s` is missing', (field) => {
      // Act
      const failure = failureOf(awsRecordWithout(field, { offset: 41 }));

      // Assess
      expect(failure.field).toBe(field);
      expect(failure.reason).toContain('got `undefined` (undefined)');
      expect(failure.offset).toBe(field === 'offset' ? undefined : 41);
    });

    it('carries its offset, topic and partition when they could be read', () => {
      // Act
      const failure = failureOf(awsRecord({ topic: 'orders-eu', partition: 4, offset: 99, timestampType: 'NO_TIMESTAMP' }), 'orders-eu-4');

      // Assess
      expect(failure).toMatchObject({ topic: 'orders-eu', partition: 4, offset: 99, index: 0, field: 'timestampType' });
      expect(failure.message).toBe(
        'Cannot decode record 0 of `orders-eu-4` (offset 99): Expected `timestampType` to be `CREATE_TIME` or `LOG_APPEND_TIME`, got `NO_TIMESTAMP` (string)',
      );
    });

    it('becomes a failure when its topic disagrees with its key', () => {
      // Act
      const failure = failureOf(awsRecord({ topic: 'payments', offset: 3 }));

      // Assess
      expect(failure).toMatchObject({ topic: 'orders', partition: 0, offset: 3, field: 'topic' });
      expect(failure.reason).toBe('Expected `topic` to be `orders` as in its key `orders-0`, got `payments` (string)');
    });

    it('becomes a failure when its partition disagrees with its key', () => {
      // Act
      const failure = failureOf(awsRecord({ partition: 1, offset: 3 }));

      // Assess
      expect(failure).toMatchObject({ topic: 'orders', partition: 0, offset: 3, field: 'partition' });
      expect(failure.reason).toBe('Expected `partition` to be 0 as in its key `orders-0`, got `1` (number)');
    });

    it.each([[null], [42], ['record'], [[awsRecord()]]])('becomes a failure when it is not an object: %p', (raw) => {
      // Act
      const failure = failureOf(raw);

      // Assess
      expect(failure).toMatchObject({ topic: 'orders', partition: 0, offset: undefined, field: 'record', raw });
    });

    it.each([
      ['partition', { partition: '0' }],
      ['partition', { partition: -1 }],
      ['timestamp', { timestamp: '1718000000000' }],
      ['timestamp', { timestamp: 1.5 }],
      ['key', { key: 'not base64!' }],
      ['key', { key: 'cmVjb3JkS2V5=' }],
      ['value', { value: 42 }],
      ['value', { value: 'eyJrZXkiOiJ2YWx1ZSJ9\n' }],
      ['headers', { headers: {} }],
      ['headers[0]', { headers: [{}] }],
      ['headers[0]', { headers: [{ a: [1], b: [2] }] }],
      ['headers[1]', { headers: [{ a: [1] }, null] }],
      ['headers[0]["a"]', { headers: [{ a: 'YQ==' }] }],
      ['headers[0]["a"]', { headers: [{ a: null }] }],
      ['headers[0]["a"][1]', { headers: [{ a: [1, 128] }] }],
      ['headers[0]["a"][0]', { headers: [{ a: [-129] }] }],
      ['headers[0]["a"][0]', { headers: [{ a: [1.5] }] }],
      ['keySchemaMetadata', { keySchemaMetadata: { schemaId: '1' } }],
      ['valueSchemaMetadata', { valueSchemaMetadata: 'AVRO' }],
      ['valueSchemaMetadata.schemaId', { valueSchemaMetadata: { dataFormat: 'AVRO', schemaId: 7 } }],
    ])('becomes a failure naming the field `%s` for %p', (field, overrides) => {
      // Act
      const failure = failureOf(awsRecord({ offset: 8, ...overrides }));

      // Assess
      expect(failure).toMatchObject({ field, offset: 8 });
      expect(failure.reason).toMatch(/^Expected `.+` to be .+, got `.*` \(\w+\)$/s);
    });
  });
});

describe('decodeKafkaEvent, a malformed event', () => {
  const record = awsRecord();

  it.each([
    ['null', null, 'Expected the Kafka event to be an object, got `null` (null)'],
    ['a string', 'event', 'Expected the Kafka event to be an object, got `event` (string)'],
    ['an array', [], 'Expected the Kafka event to be an object, got `[]` (array)'],
    ['without eventSource', { records: {} }, 'Expected `eventSource` to be `aws:kafka` or `SelfManagedKafka`, got `undefined` (undefined)'],
    ['from SQS', { eventSource: 'aws:sqs', records: {} }, 'Expected `eventSource` to be `aws:kafka` or `SelfManagedKafka`, got `aws:sqs` (string)'],
    ['with eventSource toString', { eventSource: 'toString', records: {} }, 'got `toString` (string)'],
    ['without records', { eventSource: 'aws:kafka' }, 'Expected `records` to be an object keyed `<topic>-<partition>`, got `undefined` (undefined)'],
    ['with records an array', { eventSource: 'aws:kafka', records: [record] }, 'Expected `records` to be an object keyed'],
    ['with a records key without `-`', { eventSource: 'aws:kafka', records: { orders: [record] } }, 'Expected each key of `records` to be `<topic>-<partition>`, got `orders` (string)'],
    ['with a records key of empty topic', { eventSource: 'aws:kafka', records: { '-0': [record] } }, 'got `-0` (string)'],
    ['with a records key of bad partition', { eventSource: 'aws:kafka', records: { 'orders-x': [record] } }, 'got `orders-x` (string)'],
    ['with a records key of padded partition', { eventSource: 'aws:kafka', records: { 'orders-01': [record] } }, 'got `orders-01` (string)'],
    ['with a records value not an array', { eventSource: 'aws:kafka', records: { 'orders-0': record } }, 'Expected `records["orders-0"]` to be an array of records'],
    ['with a number eventSourceArn', { eventSource: 'aws:kafka', eventSourceArn: 1, records: {} }, 'Expected `eventSourceArn` to be a string, got `1` (number)'],
    ['with an array bootstrapServers', { eventSource: 'aws:kafka', bootstrapServers: ['b-1:9092'], records: {} }, 'Expected `bootstrapServers` to be a comma-separated string'],
  ])('throws one EventDecodeError for an event %s', (_case, event, message) => {
    // Act
    const act = () => decodeKafkaEvent(event);

    // Assess
    expect(act).toThrow(EventDecodeError);
    expect(act).toThrow(message);
  });

  it('throws an EventDecodeError that is a non-retriable LanesError', () => {
    // Act
    let thrown: unknown;
    try {
      decodeKafkaEvent({ eventSource: 'aws:kafka' });
    } catch (error) {
      thrown = error;
    }

    // Assess
    expect(thrown).toBeInstanceOf(LanesError);
    expect(thrown).toMatchObject({ name: 'EventDecodeError', retriable: false });
  });

  it('accepts `aws:SelfManagedKafka`, seen in community samples, as a self-managed event', () => {
    // Act
    const decoded = decodeKafkaEvent({ eventSource: 'aws:SelfManagedKafka', bootstrapServers: 'b-1:9092', records: { 'orders-0': [record] } });

    // Assess
    expect(decoded.source).toBe('SelfManagedKafka');
    expect(onlyPartition(decoded.partitions).records).toHaveLength(1);
  });
});

describe('decodeKafkaEventLazily', () => {
  const recordAt = (offset: number, overrides: Record<string, unknown> = {}): Record<string, unknown> =>
    awsRecord({ offset, key: base64(`k${offset}`), ...overrides });

  it('decodes a batch into the records and failures decodeKafkaEvent gives, each item once', () => {
    // Prepare: a malformed record between good ones, offsets ascending.
    const list = [recordAt(4), recordAt(5, { value: 'not base64!' }), recordAt(7)];
    const event = awsEvent('SelfManagedKafka', { 'orders-0': list });

    // Act
    const lazy = decodeKafkaEventLazily(event).partitions[0] as LazyPartitionBatch;
    const first = lazy.decodeAt(0);

    // Assess
    expect(lazy.size).toBe(3);
    expect(lazy.ascendingOffsets()).toEqual([4, 5, 7]);
    expect(lazy.decodeAt(1)).toMatchObject({ offset: 5, field: 'value' });
    expect(lazy.records[0]).toBe(first);
    const eager = onlyPartition(decodeKafkaEvent(event).partitions);
    expect({ records: lazy.records, failures: lazy.failures }).toEqual({ records: eager.records, failures: eager.failures });
  });

  it.each([
    ['descending offsets', [recordAt(5), recordAt(4)]],
    ['a repeated offset', [recordAt(4), recordAt(4)]],
    ['a record without a readable offset', [recordAt(4), recordAt(5, { offset: -1 })]],
    ['an item that is no object', [recordAt(4), 'junk']],
  ])('gives no ascending offsets for %s, and decodes it whole as decodeKafkaEvent does', (_name, list) => {
    const event = awsEvent('SelfManagedKafka', { 'orders-0': list });

    const lazy = decodeKafkaEventLazily(event).partitions[0] as LazyPartitionBatch;

    expect(lazy.ascendingOffsets()).toBeUndefined();
    const eager = onlyPartition(decodeKafkaEvent(event).partitions);
    expect({ records: lazy.records, failures: lazy.failures }).toEqual({ records: eager.records, failures: eager.failures });
  });

  it('checks an item without making it (failureAt), then makes the record decodeAt gives (recordAt), anew each time', () => {
    // Prepare
    const list = [recordAt(4, { headers: [{ trace: [97] }], keySchemaMetadata: { dataFormat: 'AVRO', schemaId: '7' } }), recordAt(5, { headers: [{ bad: [300] }] }), recordAt(6, { key: null })];
    const event = awsEvent('SelfManagedKafka', { 'orders-0': list });
    const lazy = decodeKafkaEventLazily(event).partitions[0] as LazyPartitionBatch;
    const eager = decodeKafkaEventLazily(event).partitions[0] as LazyPartitionBatch;

    // Act
    const failures = [0, 1, 2].map((i) => lazy.failureAt(i));

    // Assess
    expect(failures[0]).toBeUndefined();
    expect(failures[1]).toEqual(eager.decodeAt(1));
    expect(failures[2]).toBeUndefined();
    expect(lazy.recordAt(0)).toEqual(eager.decodeAt(0));
    expect(lazy.recordAt(2)).toEqual(eager.decodeAt(2));
    expect(lazy.recordAt(0)).not.toBe(lazy.recordAt(0));
    expect(() => lazy.recordAt(1)).toThrow(EventDecodeError);
    expect(lazy.rawAt(1)).toBe(list[1]);
  });

  it('gives the key as AWS sent it when it is the base64 of its bytes, null for a null key', () => {
    const list = [recordAt(4, { key: 'YQ==' }), recordAt(5, { key: 'YR==' }), recordAt(6, { key: null }), recordAt(7, { key: '' })];
    const lazy = decodeKafkaEventLazily(awsEvent('SelfManagedKafka', { 'orders-0': list })).partitions[0] as LazyPartitionBatch;

    expect([0, 1, 2, 3].map((i) => lazy.keyTextAt(i))).toEqual(['YQ==', undefined, null, '']);
  });

  it('throws the EventDecodeError decodeKafkaEvent throws for a malformed event, before any record is decoded', () => {
    expect(() => decodeKafkaEventLazily(awsEvent('SelfManagedKafka', { orders: [] }))).toThrow(EventDecodeError);
    expect(() => decodeKafkaEventLazily(awsEvent('SelfManagedKafka', { 'orders-0': {} }))).toThrow(EventDecodeError);
    expect(() => decodeKafkaEventLazily({ eventSource: 'nope', records: {} })).toThrow(EventDecodeError);
  });
});
