import fc from 'fast-check';
import { decodeKafkaEvent, decodeKafkaEventLazily, encodeKafkaEvent, EventDecodeError, topicPartitionKey } from '../../../src/event';
import type { DecodedKafkaEvent, KafkaRecordInput, LazyPartitionBatch } from '../../../src/event';
import { awsRecord, MSK_ARN } from './factories';

/** Decodes, and fails the property if anything but an EventDecodeError escapes. */
function decodeOrEventDecodeError(event: unknown): DecodedKafkaEvent | undefined {
  try {
    return decodeKafkaEvent(event);
  } catch (error) {
    if (error instanceof EventDecodeError) return undefined;
    throw error;
  }
}

const source = fc.constantFrom('aws:kafka' as const, 'SelfManagedKafka' as const);
const bytes = fc.uint8Array({ maxLength: 24 }).map((array) => Buffer.from(array));
const topic = fc.stringMatching(/^[a-zA-Z0-9._-]{1,12}$/);
const recordsKey = fc.oneof(
  fc.tuple(topic, fc.nat()).map(([t, p]) => topicPartitionKey(t, p)),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('__proto__', 'toString', 'orders-01', '-0'),
);

describe('decodeKafkaEvent properties', () => {
  it('throws nothing but an EventDecodeError for any JSON value as an event', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (event) => {
        decodeOrEventDecodeError(event);
      }),
      { numRuns: 500 },
    );
  });

  it('throws nothing but an EventDecodeError for anything as an event', () => {
    fc.assert(
      fc.property(fc.anything(), (event) => {
        decodeOrEventDecodeError(event);
      }),
      { numRuns: 500 },
    );
  });

  it('throws nothing but an EventDecodeError for event-shaped objects with arbitrary records', () => {
    const event = fc.record({
      eventSource: fc.oneof(source, fc.jsonValue()),
      bootstrapServers: fc.oneof(fc.string(), fc.jsonValue()),
      records: fc.oneof(fc.dictionary(recordsKey, fc.array(fc.oneof(fc.jsonValue(), fc.anything()))), fc.jsonValue()),
    });
    fc.assert(
      fc.property(event, (candidate) => {
        decodeOrEventDecodeError(candidate);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws for any value as a record, and yields exactly one record or one failure', () => {
    fc.assert(
      fc.property(source, fc.oneof(fc.jsonValue(), fc.anything()), (eventSource, raw) => {
        const decoded = decodeKafkaEvent({ eventSource, eventSourceArn: MSK_ARN, bootstrapServers: '', records: { 'orders-0': [raw] } });
        const [batch] = decoded.partitions;
        const outcomes = [...(batch?.records ?? []), ...(batch?.failures ?? [])];
        expect(outcomes).toHaveLength(1);
        expect(outcomes[0]?.raw).toBe(raw);
      }),
      { numRuns: 500 },
    );
  });

  it('decodes lazily into what decodeKafkaEvent gives, whichever items are decoded first', () => {
    const item = fc.oneof(
      fc.nat(20).map((offset) => awsRecord({ offset })),
      fc.tuple(fc.nat(20), fc.constantFrom('key', 'value', 'timestamp', 'headers'), fc.jsonValue()).map(([offset, name, replacement]) => awsRecord({ offset, [name]: replacement })),
      fc.jsonValue(),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 12 }), fc.array(fc.nat(11)), (list, firstDecoded) => {
        const event = { eventSource: 'SelfManagedKafka', records: { 'orders-0': list } };
        const lazy = decodeKafkaEventLazily(event).partitions[0] as LazyPartitionBatch;
        const offsets = lazy.ascendingOffsets();
        for (const index of firstDecoded) if (index < list.length) lazy.decodeAt(index);
        const eager = decodeKafkaEvent(event).partitions[0]!;
        expect({ records: lazy.records, failures: lazy.failures }).toEqual({ records: eager.records, failures: eager.failures });
        // With ascending offsets, item i is the record or the failure of the i-th offset.
        if (offsets !== undefined) list.forEach((_, i) => expect(lazy.decodeAt(i).offset).toBe(offsets[i]));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws for a valid record with one field replaced by any JSON value', () => {
    const field = fc.constantFrom('topic', 'partition', 'offset', 'timestamp', 'timestampType', 'key', 'value', 'headers', 'keySchemaMetadata', 'valueSchemaMetadata');
    fc.assert(
      fc.property(field, fc.jsonValue(), (name, replacement) => {
        const raw = awsRecord({ [name]: replacement });
        const decoded = decodeKafkaEvent({ eventSource: 'SelfManagedKafka', records: { 'orders-0': [raw] } });
        const [batch] = decoded.partitions;
        expect((batch?.records.length ?? 0) + (batch?.failures.length ?? 0)).toBe(1);
        for (const failure of batch?.failures ?? []) expect(failure.field.startsWith(name)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('encodeKafkaEvent then decodeKafkaEvent', () => {
  const optionalBytes = fc.oneof(fc.constant(undefined), fc.constant(null), bytes);
  const headerName = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('__proto__', 'toString', 'ë', ''));
  const schemaMetadata = fc.option(
    fc.record({ dataFormat: fc.constantFrom('AVRO', 'JSON', 'PROTOBUF'), schemaId: fc.string() }, { requiredKeys: ['dataFormat'] }),
    { nil: undefined },
  );
  const record: fc.Arbitrary<KafkaRecordInput> = fc.record({
    topic: fc.constantFrom('orders', 'orders-eu', 'a-b-c'),
    partition: fc.oneof(fc.constantFrom(0, 1, 2_147_483_647), fc.nat()),
    offset: fc.oneof(fc.nat(100), fc.maxSafeNat()),
    timestamp: fc.maxSafeInteger(),
    timestampType: fc.constantFrom('CREATE_TIME' as const, 'LOG_APPEND_TIME' as const),
    key: optionalBytes,
    value: optionalBytes,
    headers: fc.array(fc.record({ name: headerName, value: bytes }), { maxLength: 4 }),
    keySchemaMetadata: schemaMetadata,
    valueSchemaMetadata: schemaMetadata,
  });

  it('gives back arbitrary records, grouped by partition and sorted by offset', () => {
    fc.assert(
      fc.property(source, fc.array(record, { maxLength: 12 }), (eventSource, records) => {
        // Prepare
        const input = eventSource === 'aws:kafka' ? { source: eventSource, eventSourceArn: MSK_ARN, records } : { source: eventSource, records };
        const expected = new Map<string, unknown[]>();
        for (const r of [...records].sort((a, b) => a.offset - b.offset)) {
          const key = topicPartitionKey(r.topic, r.partition);
          expected.set(key, [
            ...(expected.get(key) ?? []),
            {
              topic: r.topic,
              partition: r.partition,
              offset: r.offset,
              timestamp: r.timestamp,
              timestampType: r.timestampType,
              key: r.key ?? null,
              value: r.value ?? null,
              headers: (r.headers ?? []).map(({ name, value }) => ({ name, value })),
              ...(r.keySchemaMetadata === undefined ? {} : { keySchemaMetadata: r.keySchemaMetadata }),
              ...(r.valueSchemaMetadata === undefined ? {} : { valueSchemaMetadata: r.valueSchemaMetadata }),
            },
          ]);
        }

        // Act: through JSON, as the Lambda runtime hands the event over
        const decoded = decodeKafkaEvent(JSON.parse(JSON.stringify(encodeKafkaEvent(input))));

        // Assess
        expect(decoded.source).toBe(eventSource);
        const actual = new Map(
          decoded.partitions.map((batch) => {
            expect(batch.failures).toEqual([]);
            return [topicPartitionKey(batch.topic, batch.partition), batch.records.map(({ raw: _raw, ...rest }) => rest)];
          }),
        );
        expect(actual).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
