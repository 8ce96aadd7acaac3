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
  it('finds a Protobuf message by its indexes, nested ones included, and encodes with the indexes back', () => {
    const proto = 'syntax = "proto3";\npackage p;\nmessage A { string a = 1; }\nmessage B { int64 n = 1; message C { bool c = 1; } }\n';
    const codec = codecOf({ format: 'protobuf', definition: proto, ref: 'schema id 3' }, 'protobuf');
    const root = protobufjs.parse(proto).root;
    const C = root.lookupType('p.B.C');
    expect(codec.decode(Buffer.from(C.encode(C.fromObject({ c: true })).finish()), [1, 0])).toEqual({ c: true });
    expect(codec.encode({ c: true }, 'p.B.C').messageIndexes).toEqual([1, 0]);
    expect(codec.encode({ n: '5' }, 'p.B').messageIndexes).toEqual([1]);
    expect(() => codec.decode(Buffer.alloc(0), [4])).toThrow('Protobuf schema id 3 has no message at indexes [4]');
    expect(writeMessageIndexes([1, 0])).toEqual(Buffer.from([4, 2, 0]));
  });

  it('refuses a value that does not match its Avro schema, naming the field', () => {
    const codec = codecOf({ format: 'avro', definition: ORDER, ref: 'schema id 1' }, 'avro');
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
