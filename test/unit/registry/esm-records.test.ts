import * as avsc from 'avsc';
import { decodeKafkaEventLazily, type KafkaRecord, type LazyPartitionBatch } from '../../../src/event';
import { handOffMessage } from '../../../src/handoff/headers';
import { readRecordParts } from '../../../src/options/deserialize';
import { DeserializationError } from '../../../src/options/errors';
import { avro, protobuf } from '../../../src/registry';
import { asProducerWrote, type EventRecordFormat } from '../../../src/registry/esm-records';
import { isEsmDecoded } from '../../../src/registry/types';
import { readFrame } from '../../../src/registry/wire-format';

const ORDER = avsc.Type.forSchema({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'item', type: 'string' }] });
const VERSION = '11111111-2222-4333-8444-555555555555';

/** One record as a mapping with a schema registry delivers it. */
function delivered(value: Buffer, metadata: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    topic: 'orders',
    partition: 0,
    offset: 7,
    timestamp: 1,
    timestampType: 'CREATE_TIME',
    key: Buffer.from('c-1').toString('base64'),
    value: value.toString('base64'),
    headers: [{ trace: [116] }],
    ...(metadata === undefined ? {} : { valueSchemaMetadata: metadata }),
    ...extra,
  };
}

/** The record the handler's decoder makes of it, given what the trigger delivers. */
function decoded(raw: Record<string, unknown>, format: EventRecordFormat | undefined): KafkaRecord {
  const event = decodeKafkaEventLazily({ eventSource: 'aws:kafka', bootstrapServers: '', records: { 'orders-0': [raw] } }, (r) => asProducerWrote(r, format));
  const record = event.partitions[0]!.records[0];
  if (record === undefined) throw new Error(event.partitions[0]!.failures[0]?.message);
  return record;
}

describe('asProducerWrote', () => {
  it('puts the Confluent frame back on a SOURCE payload from its numeric schema id, and drops the metadata', () => {
    // Prepare
    const payload = ORDER.toBuffer({ id: 1, item: 'a' });

    // Act
    const record = decoded(delivered(payload, { dataFormat: 'AVRO', schemaId: '7' }), 'SOURCE');

    // Assess
    expect(readFrame(record.value!)).toEqual({ schema: { registry: 'confluent', id: 7 }, zlib: false, payload });
    expect(record.valueSchemaMetadata).toBeUndefined();
    expect(record.headers.map((h) => h.name)).toEqual(['trace']);
  });

  it("puts Glue's frame back (no compression) from a schema version id, and leaves a Protobuf payload's message indexes", () => {
    // Prepare: a Confluent Protobuf payload as the mapping leaves it: indexes [1] (0x02 0x02), then the message.
    const message = Buffer.from([0x02, 0x02, 0x0a, 0x01, 0x61]);

    // Act
    const glue = decoded(delivered(Buffer.from([2, 0x61]), { dataFormat: 'AVRO', schemaId: VERSION }), 'SOURCE');
    const confluent = decoded(delivered(message, { dataFormat: 'PROTOBUF', schemaId: '12' }), 'SOURCE');

    // Assess
    expect(readFrame(glue.value!)).toEqual({ schema: { registry: 'glue', versionId: VERSION }, zlib: false, payload: Buffer.from([2, 0x61]) });
    expect(confluent.value).toEqual(Buffer.concat([Buffer.from([0, 0, 0, 0, 12]), message]));
  });

  it('leaves a SOURCE part whose schema id is of neither form as delivered, metadata included', () => {
    // Act
    const record = decoded(delivered(Buffer.from([2, 0x61]), { dataFormat: 'AVRO', schemaId: 'orders-value' }), 'SOURCE');

    // Assess
    expect(record.value).toEqual(Buffer.from([2, 0x61]));
    expect(record.valueSchemaMetadata).toEqual({ dataFormat: 'AVRO', schemaId: 'orders-value' });
  });

  it('marks the parts a JSON mapping decoded with the lanes-esm-decoded header, once, however often the record is read', () => {
    // Prepare
    const raw = delivered(Buffer.from('{"id":1,"item":"a"}'), { dataFormat: 'AVRO', schemaId: '7' }, { keySchemaMetadata: { dataFormat: 'AVRO', schemaId: '3' } });

    // Act
    const once = asProducerWrote(raw, 'JSON');
    const twice = asProducerWrote(once, 'JSON');
    const record = decoded(raw, 'JSON');

    // Assess
    expect(twice).toBe(once);
    expect(record.value?.toString()).toBe('{"id":1,"item":"a"}');
    expect(record.headers.map((h) => [h.name, h.value.toString()])).toEqual([['trace', 't'], ['lanes-esm-decoded', 'key,value']]);
    expect(isEsmDecoded(record.headers, 'value')).toBe(true);
  });

  it('changes nothing without an integration or without metadata', () => {
    // Prepare
    const raw = delivered(Buffer.from([2]), { dataFormat: 'AVRO', schemaId: '7' });
    const plain = delivered(Buffer.from([2]), undefined);

    // Act, Assess
    expect(asProducerWrote(raw, undefined)).toBe(raw);
    expect(asProducerWrote(plain, 'SOURCE')).toBe(plain);
    expect(asProducerWrote(plain, 'JSON')).toBe(plain);
  });
});

describe('a registry format reading what a JSON mapping delivered', () => {
  const options = { registry: 'http://127.0.0.1:1' };

  it('parses the JSON text without asking the registry (nothing listens at its URL), and a retry copy keeps the mark', async () => {
    // Prepare
    const record = decoded(delivered(Buffer.from('{"id":"5","item":"a"}'), { dataFormat: 'PROTOBUF', schemaId: '7' }), 'JSON');

    // Act
    const parts = await readRecordParts({ key: 'string', value: protobuf(options) }, record);
    const copy = handOffMessage({ record, origin: { topic: 'orders', partition: 0, offset: 7 }, kind: 'retry', topic: 'g.retry.5s', attempt: 2, dueAtMs: 1, firstFailureAtMs: 1 });

    // Assess
    expect(parts).toEqual({ key: 'c-1', value: { id: '5', item: 'a' } });
    expect(String((copy.headers as Record<string, unknown>)['lanes-esm-decoded'])).toBe('value');
  });

  it('dead-letters a marked part that is not JSON, saying what was expected', async () => {
    // Prepare
    const record = decoded(delivered(Buffer.from([0, 0, 0, 0, 7, 2]), { dataFormat: 'AVRO', schemaId: '7' }), 'JSON');

    // Act
    const read = readRecordParts({ key: 'string', value: avro(options) }, record);

    // Assess
    await expect(read).rejects.toBeInstanceOf(DeserializationError);
    await expect(read).rejects.toThrow(/expected the JSON text the trigger's schema registry integration decoded the value to \(eventRecordFormat JSON\)/);
  });
});

describe('a SOURCE record read the way the source path reads a batch (checked, then made when it runs, parked raw)', () => {
  it('is the re-framed record through every reader: failureAt, recordAt, keyTextAt and rawAt', () => {
    // Prepare
    const payload = ORDER.toBuffer({ id: 2, item: 'b' });
    const raw = delivered(payload, { dataFormat: 'AVRO', schemaId: '7' });
    const event = decodeKafkaEventLazily({ eventSource: 'aws:kafka', bootstrapServers: '', records: { 'orders-0': [raw] } }, (r) => asProducerWrote(r, 'SOURCE'));
    const batch = event.partitions[0] as LazyPartitionBatch;

    // Act
    const failure = batch.failureAt(0);
    const record = batch.recordAt(0);
    const parked = batch.rawAt(0) as Record<string, unknown>;

    // Assess: no failure, and the value carries its frame back wherever it is read; a parked item is read again as is.
    expect(failure).toBeUndefined();
    expect(readFrame(record.value!)).toEqual({ schema: { registry: 'confluent', id: 7 }, zlib: false, payload });
    expect(record.valueSchemaMetadata).toBeUndefined();
    expect(batch.keyTextAt(0)).toBe(raw['key']);
    expect(parked['valueSchemaMetadata']).toBeUndefined();
    expect(asProducerWrote(parked, 'SOURCE')).toBe(parked);
    expect(Buffer.from(parked['value'] as string, 'base64')).toEqual(record.value);
  });
});
