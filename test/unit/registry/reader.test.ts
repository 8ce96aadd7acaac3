import { deflateSync } from 'node:zlib';
import * as avsc from 'avsc';
import * as protobufjs from 'protobufjs';
import { avro, jsonSchema, protobuf } from '../../../src/registry';
import { codecOf, CodecError } from '../../../src/registry/codecs';
import { SchemaRegistryUnavailableError } from '../../../src/registry/errors';
import { RegistryReader } from '../../../src/registry/reader';
import { glueFrame, writeMessageIndexes } from '../../../src/registry/wire-format';
import { readRecordParts } from '../../../src/options/deserialize';
import { DeserializationError } from '../../../src/options/errors';
import type { KafkaRecord } from '../../../src/event';
import type { GlueSchemaSource } from '../../../src/registry/types';

const ORDER = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'item', type: 'string' }] });
const orderType = avsc.Type.forSchema(JSON.parse(ORDER) as avsc.Schema);
const VERSION = '11111111-2222-4333-8444-555555555555';

/** A Glue schema source over a map: no I/O, as Glue's `GetSchemaVersion` would answer. */
function glueOf(schemas: Record<string, { dataFormat: string; definition: string }>, asked: string[] = []): GlueSchemaSource {
  return async (id) => (asked.push(id), schemas[id]);
}

function recordOf(value: Buffer | null): KafkaRecord {
  return { topic: 'orders', partition: 0, offset: 7, timestamp: 0, timestampType: 'CREATE_TIME', key: null, value, headers: [] } as unknown as KafkaRecord;
}

describe('RegistryReader with a Glue schema source', () => {
  it('decodes Avro framed by Glue, compressed or not, asking the source once per version', async () => {
    const asked: string[] = [];
    const reader = new RegistryReader('avro', { glue: glueOf({ [VERSION]: { dataFormat: 'AVRO', definition: ORDER } }, asked) });
    const payload = orderType.toBuffer({ id: 1, item: 'a' });
    expect({ ...(await reader.decode(glueFrame(VERSION, payload, false)) as object) }).toEqual({ id: 1, item: 'a' });
    expect({ ...(await reader.decode(glueFrame(VERSION, deflateSync(payload), true)) as object) }).toEqual({ id: 1, item: 'a' });
    expect(asked).toEqual([VERSION]);
  });

  it('says what was expected and what came for an unknown version, another format, a payload that does not decode', async () => {
    const reader = new RegistryReader('avro', { glue: glueOf({ [VERSION]: { dataFormat: 'JSON', definition: '{}' } }) });
    await expect(reader.decode(glueFrame('99999999-2222-4333-8444-555555555555', Buffer.from([2]), false))).rejects.toThrow(/no schema version 99999999-/);
    await expect(reader.decode(glueFrame(VERSION, Buffer.from([2]), false))).rejects.toThrow('expected the avro format, but Glue schema version 11111111-2222-4333-8444-555555555555 is json');
    const avroReader = new RegistryReader('avro', { glue: glueOf({ [VERSION]: { dataFormat: 'AVRO', definition: ORDER } }) });
    await expect(avroReader.decode(glueFrame(VERSION, Buffer.from([2, 0x61, 0x62]), false))).rejects.toThrow(CodecError);
    await expect(avroReader.decode(glueFrame(VERSION, Buffer.from('not zlib'), true))).rejects.toThrow(/do not inflate/);
    await expect(avroReader.decode(Buffer.from([0, 0, 0, 0, 1, 2]))).rejects.toThrow(/expected Glue's wire format .* got Confluent's \(schema id 1\)/);
  });

  it("decodes Protobuf framed by Glue's serializer, compressed or not: its message index counts every message type, nested and map entries too, by full name", async () => {
    // Prepare: Glue's numbering of this file, by full name: shop.Envelope 0, shop.Shipment 1, shop.Shipment.Address 2,
    // shop.Shipment.CountsEntry 3 (the map's entry type), shop.Shipment.Line 4.
    const proto = 'syntax = "proto3";\npackage shop;\nmessage Shipment { string id = 1; message Line { string sku = 1; } message Address { string city = 1; } map<string, int32> counts = 3; }\nmessage Envelope { string source = 1; }\n';
    const reader = new RegistryReader('protobuf', { glue: glueOf({ [VERSION]: { dataFormat: 'PROTOBUF', definition: proto } }) });
    const root = protobufjs.parse(proto, { keepCase: true }).root;
    const encode = (name: string, value: object): Buffer => {
      const type = root.lookupType(name);
      return Buffer.from(type.encode(type.fromObject(value)).finish());
    };
    // Glue's bytes: header version 3, compression byte (0 none, 5 zlib), the schema version id's 16 bytes, then the
    // message index as an unsigned varint followed by the message, the two deflated together when compressed.
    const glueBytes = (index: number, message: Buffer, zlib: boolean): Buffer => {
      const data = Buffer.concat([Buffer.from([index]), message]);
      return Buffer.concat([Buffer.from([3, zlib ? 5 : 0]), Buffer.from(VERSION.replace(/-/g, ''), 'hex'), zlib ? deflateSync(data) : data]);
    };

    // Act
    const line = await reader.decode(glueBytes(4, encode('shop.Shipment.Line', { sku: 'sku-1' }), false));
    const shipment = await reader.decode(glueBytes(1, encode('shop.Shipment', { id: 's-1', counts: { a: 2 } }), true));
    const envelope = await reader.decode(glueBytes(0, encode('shop.Envelope', { source: 'web' }), false));

    // Assess
    expect([line, shipment, envelope]).toEqual([{ sku: 'sku-1' }, { id: 's-1', counts: { a: 2 } }, { source: 'web' }]);
    await expect(reader.decode(glueBytes(3, Buffer.alloc(0), false))).rejects.toThrow(/no message type at Glue's message index 3/);
    await expect(reader.decode(glueBytes(9, Buffer.alloc(0), false))).rejects.toThrow(/no message type at Glue's message index 9 \(5 types, map entries counted\)/);
  });

  it('treats a source that throws as a registry that does not answer, retried until it gives the schema', async () => {
    let fail = true;
    const reader = new RegistryReader('avro', { glue: async () => {
      if (fail) throw new Error('ThrottlingException');
      return { dataFormat: 'AVRO', definition: ORDER };
    } });
    const bytes = glueFrame(VERSION, orderType.toBuffer({ id: 2, item: 'b' }), false);
    await expect(reader.decode(bytes)).rejects.toThrow(SchemaRegistryUnavailableError);
    fail = false;
    expect({ ...(await reader.decode(bytes) as object) }).toEqual({ id: 2, item: 'b' });
  });
});

describe('codecs', () => {
  it('finds a Protobuf message by its indexes, nested ones included, and encodes with the indexes back', async () => {
    const proto = 'syntax = "proto3";\npackage p;\nmessage A { string a = 1; }\nmessage B { int64 n = 1; message C { bool c = 1; } }\n';
    const codec = await codecOf({ format: 'protobuf', definition: proto, ref: 'schema id 3' }, 'protobuf');
    const root = protobufjs.parse(proto).root;
    const C = root.lookupType('p.B.C');
    expect(codec.decode(Buffer.from(C.encode(C.fromObject({ c: true })).finish()), [1, 0])).toEqual({ c: true });
    expect(codec.encode({ c: true }, 'p.B.C').messageIndexes).toEqual([1, 0]);
    expect(codec.encode({ n: '5' }, 'p.B').messageIndexes).toEqual([1]);
    expect(() => codec.decode(Buffer.alloc(0), [4])).toThrow('Protobuf schema id 3 has no message at indexes [4]');
    expect(writeMessageIndexes([1, 0])).toEqual(Buffer.from([4, 2, 0]));
  });

  it('checks JSON text against its registered JSON Schema, naming where, what was expected and what came', async () => {
    // Prepare
    const schema = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: ['id'], properties: { id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } } });
    const reader = new RegistryReader('json', { glue: glueOf({ [VERSION]: { dataFormat: 'JSON', definition: schema } }) });
    const framed = (text: string): Buffer => glueFrame(VERSION, Buffer.from(text), false);
    const codec = await codecOf({ format: 'json', definition: schema, ref: 'schema id 4' }, 'json');

    // Act, Assess
    expect(await reader.decode(framed('{"id":1,"tags":["a"]}'))).toEqual({ id: 1, tags: ['a'] });
    await expect(reader.decode(framed('{"id":1,"tags":["a",2]}'))).rejects.toThrow(/does not match JSON Schema Glue schema version 11111111-.*: \/tags\/1 must be string \(type \{"type":"string"\}\), got 2/);
    await expect(reader.decode(framed('{"tags":[]}'))).rejects.toThrow(/the value must have required property 'id'/);
    await expect(reader.decode(framed('{"id":'))).rejects.toThrow(/are not the JSON text/);
    expect(() => codec.encode({ id: 'x' })).toThrow('the value does not match JSON Schema schema id 4: /id must be integer (type {"type":"integer"}), got "x"');
    expect(codec.encode({ id: 2 }).payload.toString()).toBe('{"id":2}');
    await expect(codecOf({ format: 'json', definition: '{"type":"nope"}', ref: 'schema id 5' }, 'json')).rejects.toThrow(/schema id 5 is not a JSON Schema Ajv can compile/);
  });

  it('refuses a value that does not match its Avro schema, naming the field', async () => {
    const codec = await codecOf({ format: 'avro', definition: ORDER, ref: 'schema id 1' }, 'avro');
    expect(() => codec.encode({ id: 'x', item: 'a' })).toThrow('the value does not match Avro schema id 1 (Order) at id');
  });
});

describe('avro(), protobuf(), jsonSchema() as options', () => {
  it('refuses options that name no registry, an unknown key or a URL that is not http(s), at start-up', () => {
    expect(() => avro({})).toThrow('Expected `avro()` to name a registry: `registry` (a Confluent-compatible URL) or `glue`, got neither');
    expect(() => protobuf({ registry: 'localhost:8081' })).toThrow(/Expected `protobuf\(\{ registry \}\)` to be an http\(s\) URL/);
    expect(() => jsonSchema({ registry: 'http://r', url: 'x' } as never)).toThrow('Unknown option(s) of `jsonSchema()`: url');
    expect(() => avro({ registry: { url: 'http://r', timeoutMs: 0 } })).toThrow(/timeoutMs.*got 0/);
  });

  it('reads a registry value for readRecordParts; what does not decode is a DeserializationError naming the record, an outage stays retriable', async () => {
    const value = avro({ glue: glueOf({ [VERSION]: { dataFormat: 'AVRO', definition: ORDER } }) });
    const good = readRecordParts({ key: 'string', value }, recordOf(glueFrame(VERSION, orderType.toBuffer({ id: 3, item: 'c' }), false)));
    expect(good).toBeInstanceOf(Promise);
    expect({ ...((await good).value as object) }).toEqual({ id: 3, item: 'c' });
    expect(await readRecordParts({ key: 'string', value }, recordOf(null))).toEqual({ key: null, value: null });
    const bad = readRecordParts({ key: 'string', value }, recordOf(Buffer.from('{"id":3}')));
    await expect(bad).rejects.toThrow(DeserializationError);
    await expect(bad).rejects.toThrow(/Cannot deserialize the value of record orders-0@7: expected magic byte 0/);
    const down = avro({ glue: async () => { throw new Error('connect ETIMEDOUT'); } });
    await expect(readRecordParts({ key: 'string', value: down }, recordOf(glueFrame(VERSION, Buffer.from([2]), false)))).rejects.toThrow(SchemaRegistryUnavailableError);
  });
});
