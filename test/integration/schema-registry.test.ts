/**
 * Avro, Protobuf and JSON Schema values through a registry, on the real broker and Redis, against the registry
 * STAND-IN of support/registry-stand-in.ts (no real registry runs on these machines: see that file). Each failure
 * mode shows the record's fate and that nothing is lost: every record produced is either handled or in the
 * dead-letter topic with the producer's bytes, or reported back to the event source.
 */
import { deflateSync } from 'node:zlib';
import type { Context } from 'aws-lambda';
import * as avsc from 'avsc';
import * as protobufjs from 'protobufjs';
import { avro, jsonSchema, lanes, NonRetriableError, protobuf, type KafkaBatchResponse } from '../../src';
import { readHandOffHeaders } from '../../src/handoff/headers';
import { confluentFrame, glueFrame, writeMessageIndexes } from '../../src/registry/wire-format';
import type { KafkaRecordInput } from '../../src/event';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { RegistryStandIn } from './support/registry-stand-in';
import { createTopic, REDIS_URL, uniqueName } from './support/stack';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const ORDER_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'Order',
  namespace: 'shop',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'item', type: 'string' },
  ],
});
const PAYMENT_SCHEMA = JSON.stringify({ type: 'record', name: 'Payment', fields: [{ name: 'amount', type: 'double' }, { name: 'currency', type: 'string' }, { name: 'note', type: 'string' }] });
const orderType = avsc.Type.forSchema(JSON.parse(ORDER_SCHEMA) as avsc.Schema);

interface Order {
  readonly id: number;
  readonly item: string;
}

const registry = new RegistryStandIn();

beforeAll(async () => {
  await registry.start();
});
afterAll(async () => {
  await registry.stop();
});

async function setUp(): Promise<{ group: string; topic: string }> {
  const group = uniqueName('grp');
  const topic = uniqueName('src');
  await createTopic(topic, 1);
  await Promise.all([...['5s', '1m', '10m'].map((tier) => createTopic(`${group}.retry.${tier}`, 1)), createTopic(`${group}.dlq`, 1)]);
  process.env.KAFKA_LANES_GROUP = group;
  process.env.KAFKA_LANES_REDIS_URL = REDIS_URL;
  return { group, topic };
}

/** What a retry copy or a dead letter says of itself (its `lanes-copy` header), as `dlq list` reads it. */
function facts(record: KafkaRecordInput): ReturnType<typeof readHandOffHeaders> {
  return readHandOffHeaders(record.headers ?? []);
}

function header(record: KafkaRecordInput, name: string): string | undefined {
  const found = record.headers?.find((h) => h.name === name);
  return found === undefined ? undefined : Buffer.from(found.value as Uint8Array).toString('utf8');
}

const invoke = (handler: (event: unknown, context: Context) => Promise<KafkaBatchResponse>, records: readonly KafkaRecordInput[]): Promise<KafkaBatchResponse> =>
  handler(eventOf(records), contextWithin(30_000) as unknown as Context);

describe('values from a schema registry (against the registry stand-in)', () => {
  const saved = { ...process.env };
  afterEach(async () => {
    process.env = { ...saved };
    await registry.available();
  });

  it('decodes Avro in Confluent\'s wire format, typed, fetching each schema id once', async () => {
    // Prepare
    const { topic } = await setUp();
    const id = registry.register(`${topic}-value`, ORDER_SCHEMA);
    await produce(topic, [1, 2, 3].map((i) => ({ key: `k${i}`, value: confluentFrame(id, orderType.toBuffer({ id: i, item: `item-${i}` })) })));
    const records = await fetchRecords(topic, 3);
    const seen: Order[] = [];
    const handler = lanes({ value: avro<Order>({ registry: registry.url }) }, async (record) => {
      // Typed: `record.value` is an Order (or null for a tombstone).
      if (record.value !== null) seen.push({ id: record.value.id, item: record.value.item });
    });
    const before = registry.requests.filter((r) => r === `GET /schemas/ids/${id}`).length;

    try {
      // Act
      const response = await invoke(handler, records);

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(seen.sort((a, b) => a.id - b.id)).toEqual([{ id: 1, item: 'item-1' }, { id: 2, item: 'item-2' }, { id: 3, item: 'item-3' }]);
      expect(registry.requests.filter((r) => r === `GET /schemas/ids/${id}`).length - before).toBe(1);
    } finally {
      await handler.close();
    }
  });

  it('decodes Protobuf (nested message indexes) and JSON Schema values', async () => {
    // Prepare
    const { topic } = await setUp();
    const proto = 'syntax = "proto3";\npackage shop;\nmessage Envelope { string source = 1; }\nmessage Shipment { string id = 1; int64 grams = 2; Status status = 3; enum Status { NEW = 0; SENT = 1; } message Line { string sku = 1; } }\n';
    const id = registry.register(`${topic}-value`, proto, 'PROTOBUF');
    const root = protobufjs.parse(proto, { keepCase: true }).root;
    const Shipment = root.lookupType('shop.Shipment');
    const Line = root.lookupType('shop.Shipment.Line');
    const shipment = Buffer.from(Shipment.encode(Shipment.fromObject({ id: 's-1', grams: '9007199254740993', status: 'SENT' })).finish());
    const line = Buffer.from(Line.encode(Line.fromObject({ sku: 'sku-9' })).finish());
    await produce(topic, [
      { key: 'a', value: Buffer.concat([confluentFrame(id, Buffer.alloc(0)), writeMessageIndexes([1]), shipment]) },
      { key: 'b', value: Buffer.concat([confluentFrame(id, Buffer.alloc(0)), writeMessageIndexes([1, 0]), line]) },
    ]);
    const records = await fetchRecords(topic, 2);
    const seen: unknown[] = [];
    const handler = lanes({ value: protobuf({ registry: registry.url }) }, async (record) => {
      seen.push(record.value);
    });
    const jsonTopic = uniqueName('src');
    await createTopic(jsonTopic, 1);
    const jsonId = registry.register(`${jsonTopic}-value`, JSON.stringify({ type: 'object', properties: { n: { type: 'number' } } }), 'JSON');
    await produce(jsonTopic, [{ key: 'j', value: confluentFrame(jsonId, Buffer.from('{"n":7}')) }]);
    const jsonRecords = await fetchRecords(jsonTopic, 1);
    const jsonSeen: unknown[] = [];
    const jsonHandler = lanes({ value: jsonSchema({ registry: registry.url }) }, async (record) => {
      jsonSeen.push(record.value);
    });

    try {
      // Act
      const response = await invoke(handler, records);
      const jsonResponse = await invoke(jsonHandler, jsonRecords);

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(seen).toEqual(expect.arrayContaining([{ id: 's-1', grams: '9007199254740993', status: 'SENT' }, { sku: 'sku-9' }]));
      expect(jsonResponse).toEqual({ batchItemFailures: [] });
      expect(jsonSeen).toEqual([{ n: 7 }]);
    } finally {
      await handler.close();
      await jsonHandler.close();
    }
  });

  it('decodes Avro in Glue\'s wire format, zlib-compressed or not, from bytes framed as Glue\'s serializer frames them', async () => {
    // Prepare
    const { topic } = await setUp();
    const versionId = '6f1c2b3a-4d5e-4f60-8172-93a4b5c6d7e8';
    const payload = orderType.toBuffer({ id: 5, item: 'glue' });
    await produce(topic, [
      { key: 'plain', value: glueFrame(versionId, payload, false) },
      { key: 'zlib', value: glueFrame(versionId, deflateSync(payload), true) },
    ]);
    const records = await fetchRecords(topic, 2);
    const asked: string[] = [];
    const seen: unknown[] = [];
    const handler = lanes({ value: avro<Order>({ glue: async (id) => (asked.push(id), id === versionId ? { dataFormat: 'AVRO', definition: ORDER_SCHEMA } : undefined) }) }, async (record) => {
      seen.push(record.value === null ? null : { ...record.value });
    });

    try {
      // Act
      const response = await invoke(handler, records);

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(seen).toEqual([{ id: 5, item: 'glue' }, { id: 5, item: 'glue' }]);
      expect(asked).toEqual([versionId]);
    } finally {
      await handler.close();
    }
  });

  it('dead-letters an unknown schema id, a payload its schema does not read and a wrong magic byte, keeping the producer\'s bytes; the rest run', async () => {
    // Prepare
    const { group, topic } = await setUp();
    const id = registry.register(`${topic}-value`, ORDER_SCHEMA);
    const otherId = registry.register(`${topic}-other`, PAYMENT_SCHEMA);
    const produced = {
      good: confluentFrame(id, orderType.toBuffer({ id: 1, item: 'one' })),
      unknownId: confluentFrame(987_654, orderType.toBuffer({ id: 2, item: 'two' })),
      // An Order's bytes framed with the id of a Payment schema: a producer that framed with the wrong id.
      mismatch: confluentFrame(otherId, orderType.toBuffer({ id: 3, item: 'three' })),
      json: Buffer.from('{"id":4,"item":"four"}'),
      last: confluentFrame(id, orderType.toBuffer({ id: 5, item: 'five' })),
    };
    await produce(topic, Object.entries(produced).map(([key, value]) => ({ key, value })));
    const records = await fetchRecords(topic, 5);
    const handled: string[] = [];
    const handler = lanes({ value: avro<Order>({ registry: registry.url }) }, async (record) => {
      handled.push(record.value!.item);
    });

    try {
      // Act
      const response = await invoke(handler, records);
      const deadLetters = await fetchRecords(`${group}.dlq`, 3);

      // Assess: two handled, three dead-lettered with their reasons and the producer's bytes; none lost.
      expect(response).toEqual({ batchItemFailures: [] });
      expect(handled.sort()).toEqual(['five', 'one']);
      const byKey = new Map(deadLetters.map((d) => [d.key!.toString(), d]));
      expect([...byKey.keys()].sort()).toEqual(['json', 'mismatch', 'unknownId']);
      for (const [key, letter] of byKey) {
        expect(Buffer.from(letter.value!)).toEqual(produced[key as keyof typeof produced]);
        expect(facts(letter).reason).toBe('deserialization');
      }
      expect(facts(byKey.get('unknownId')!).errorMessage).toMatch(/no schema id 987654/);
      expect(facts(byKey.get('mismatch')!).errorMessage).toMatch(new RegExp(`do not decode with Avro schema id ${otherId} \\(Payment\\)`));
      expect(facts(byKey.get('json')!).errorMessage).toMatch(/expected magic byte 0 \(Confluent wire format\) or header version 3 \(Glue\), got 0x7b/);
    } finally {
      await handler.close();
    }
  });

  it.each(['refuse', '503'] as const)(
    'sends records back to the event source while the registry does not answer (%s), never to the dead-letter topic; they run once it answers',
    async (how) => {
      // Prepare: a schema id the handler has not fetched yet, and a registry that then stops answering.
      const { group, topic } = await setUp();
      const id = registry.register(`${topic}-value`, ORDER_SCHEMA.replace('"Order"', `"Order${how}"`));
      const type = avsc.Type.forSchema(JSON.parse(ORDER_SCHEMA.replace('"Order"', `"Order${how}"`)) as avsc.Schema);
      await produce(topic, [
        { key: 'same', value: confluentFrame(id, type.toBuffer({ id: 1, item: 'first' })) },
        { key: 'same', value: confluentFrame(id, type.toBuffer({ id: 2, item: 'second' })) },
        { key: 'other', value: confluentFrame(id, type.toBuffer({ id: 3, item: 'third' })) },
      ]);
      const records = await fetchRecords(topic, 3);
      const handled: string[] = [];
      const handler = lanes({ value: avro<Order>({ registry: { url: registry.url, timeoutMs: 2_000 } }) }, async (record) => {
        handled.push(record.value!.item);
      });
      await registry.unavailable(how);

      try {
        // Act: an invocation while the registry is out, then the event source's redelivery once it is back.
        const during = await invoke(handler, records);
        await registry.available();
        const redelivered = records.filter((r) => during.batchItemFailures.some((f) => f.itemIdentifier.offset === r.offset));
        const after = await invoke(handler, redelivered);
        await produce(`${group}.dlq`, [{ key: 'marker', value: 'end' }]);
        const deadLetters = await fetchRecords(`${group}.dlq`, 1);

        // Assess: all three reported back (none attempted, none dead-lettered), then all three run, in lane order.
        expect(during.batchItemFailures.map((f) => f.itemIdentifier.offset).sort()).toEqual(records.map((r) => r.offset).sort());
        expect(handled.filter((item) => item !== 'third')).toEqual(['first', 'second']);
        expect(after).toEqual({ batchItemFailures: [] });
        expect(handled.sort()).toEqual(['first', 'second', 'third']);
        expect(deadLetters.map((d) => d.key?.toString())).toEqual(['marker']);
      } finally {
        await handler.close();
      }
    },
  );

  it("hands a retry copy back to the event source while the registry is down when the retry function decodes it, never to the dead-letter topic; the copy keeps the producer's bytes and runs once the registry answers", async () => {
    // Prepare: a record whose first attempt fails, so a retry copy is written; the schema is new to every cache.
    const { group, topic } = await setUp();
    const schema = ORDER_SCHEMA.replace('"Order"', '"OrderRetried"');
    const type = avsc.Type.forSchema(JSON.parse(schema) as avsc.Schema);
    const id = registry.register(`${topic}-value`, schema);
    const producedBytes = confluentFrame(id, type.toBuffer({ id: 1, item: 'retried' }));
    await produce(topic, [{ key: 'k', value: producedBytes }]);
    const records = await fetchRecords(topic, 1);
    const runs: string[] = [];
    const run = async (record: { value: Order | null }, ctx: { attempt: number }): Promise<void> => {
      runs.push(`${record.value!.item}@${ctx.attempt}`);
      if (ctx.attempt === 1) throw new Error('first attempt fails');
    };
    const sourceFunction = lanes({ value: avro<Order>({ registry: { url: registry.url, timeoutMs: 2_000 } }) }, run);
    // The retry function runs in its own process: its schema cache is its own (another client config here).
    const retryFunction = lanes({ value: avro<Order>({ registry: { url: registry.url, timeoutMs: 2_001 } }) }, run);

    try {
      // Act: the source run writes the copy; the retry function gets it while the registry is down, then again.
      const fromSource = await invoke(sourceFunction, records);
      const [copy] = await fetchRecords(`${group}.retry.5s`, 1);
      await registry.unavailable('refuse');
      const during = await invoke(retryFunction, [copy!]);
      await registry.available();
      const after = await invoke(retryFunction, [copy!]);
      await produce(`${group}.dlq`, [{ key: 'marker', value: 'end' }]);
      const deadLetters = await fetchRecords(`${group}.dlq`, 1);

      // Assess: the copy holds the producer's bytes; while the registry is down it goes back, not run, not dead-lettered.
      expect(fromSource).toEqual({ batchItemFailures: [] });
      expect(Buffer.from(copy!.value!)).toEqual(producedBytes);
      expect(during.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([{ partition: `${copy!.topic}-${copy!.partition}`, offset: copy!.offset }]);
      expect(after).toEqual({ batchItemFailures: [] });
      expect(runs).toEqual(['retried@1', 'retried@2']);
      expect(deadLetters.map((d) => d.key?.toString())).toEqual(['marker']);
    } finally {
      await Promise.all([sourceFunction.close(), retryFunction.close()]);
    }
  });

  it("reads what a trigger with the schema registry integration delivers: SOURCE framed again (dead letters keep the producer's bytes), JSON parsed (no registry asked, dead letters marked)", async () => {
    // Prepare: Avro records as the producer wrote them, then as the event source mapping delivers them.
    const { group, topic } = await setUp();
    const id = registry.register(`${topic}-value`, ORDER_SCHEMA);
    const produced = [1, 2].map((i) => confluentFrame(id, orderType.toBuffer({ id: i, item: i === 1 ? 'ok' : 'bad' })));
    await produce(topic, produced.map((value, i) => ({ key: `k${i + 1}`, value })));
    const records = await fetchRecords(topic, 2);
    const metadata = { dataFormat: 'AVRO', schemaId: String(id) };
    const source = records.map((r) => ({ ...r, value: Buffer.from(r.value!).subarray(5), valueSchemaMetadata: metadata }));
    const json = records.map((r, i) => ({ ...r, value: Buffer.from(JSON.stringify({ id: i + 1, item: i === 0 ? 'ok' : 'bad' })), valueSchemaMetadata: metadata }));
    const seen: string[] = [];
    const run = async (record: { value: Order | null }): Promise<void> => {
      if (record.value?.item === 'bad') throw new NonRetriableError('refused');
      seen.push(`${record.value!.id}:${record.value!.item}`);
    };
    process.env.KAFKA_LANES_EVENT_RECORD_FORMAT = 'SOURCE';
    const sourceHandler = lanes({ value: avro<Order>({ registry: registry.url }) }, run);
    process.env.KAFKA_LANES_EVENT_RECORD_FORMAT = 'JSON';
    const jsonGroup = uniqueName('grp');
    await createTopic(`${jsonGroup}.dlq`, 1);
    process.env.KAFKA_LANES_GROUP = jsonGroup;
    const jsonHandler = lanes({ value: avro<Order>({ registry: 'http://127.0.0.1:1' }) }, run);

    try {
      // Act
      const fromSource = await invoke(sourceHandler, source);
      const fromJson = await invoke(jsonHandler, json);
      const [sourceLetter] = await fetchRecords(`${group}.dlq`, 1);
      const [jsonLetter] = await fetchRecords(`${jsonGroup}.dlq`, 1);

      // Assess
      expect([fromSource, fromJson]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(seen).toEqual(['1:ok', '1:ok']);
      expect(Buffer.from(sourceLetter!.value!)).toEqual(produced[1]);
      expect(header(sourceLetter!, 'lanes-esm-decoded')).toBeUndefined();
      expect(JSON.parse(Buffer.from(jsonLetter!.value!).toString())).toEqual({ id: 2, item: 'bad' });
      expect(header(jsonLetter!, 'lanes-esm-decoded')).toBe('value');
    } finally {
      await Promise.all([sourceHandler.close(), jsonHandler.close()]);
    }
  });

  it('encodes outputs with a registered schema: ctx.send of encode(value) reads back with the same format', async () => {
    // Prepare
    const { topic } = await setUp();
    const out = uniqueName('out');
    await createTopic(out, 1);
    process.env.KAFKA_LANES_OUTPUTS = out;
    const orders = avro<Order>({ registry: registry.url, subject: `${out}-value`, schema: ORDER_SCHEMA });
    const id = registry.register(`${topic}-value`, ORDER_SCHEMA);
    await produce(topic, [{ key: 'k', value: confluentFrame(id, orderType.toBuffer({ id: 9, item: 'in' })) }]);
    const records = await fetchRecords(topic, 1);
    const handler = lanes({ value: orders }, async (record, ctx) => {
      await ctx.send(out, { key: 'k', value: await orders.encode({ id: record.value!.id, item: 'out' }) });
    });

    try {
      // Act
      const response = await invoke(handler, records);
      const [written] = await fetchRecords(out, 1);

      // Assess: framed with the id the registry gave the subject, decodable by any Confluent deserializer.
      expect(response).toEqual({ batchItemFailures: [] });
      const bytes = Buffer.from(written!.value!);
      expect(bytes[0]).toBe(0);
      expect(bytes.readInt32BE(1)).toBe(id);
      expect({ ...(orderType.fromBuffer(bytes.subarray(5)) as Order) }).toEqual({ id: 9, item: 'out' });
      expect(registry.requests).toContain(`POST /subjects/${out}-value/versions`);
    } finally {
      await handler.close();
    }
  });

  it('encodes what ctx.send gives a topic declared in outputFormats; a value its schema refuses fails the record and writes nothing', async () => {
    // Prepare
    const { group, topic } = await setUp();
    const out = uniqueName('out');
    await createTopic(out, 1);
    process.env.KAFKA_LANES_OUTPUTS = out;
    const id = registry.register(`${topic}-value`, ORDER_SCHEMA);
    await produce(topic, [
      { key: 'good', value: confluentFrame(id, orderType.toBuffer({ id: 1, item: 'in' })) },
      { key: 'bad', value: confluentFrame(id, orderType.toBuffer({ id: 2, item: 'in' })) },
    ]);
    const records = await fetchRecords(topic, 2);
    const enriched = avro<Order>({ registry: registry.url, subject: `${out}-value`, schema: ORDER_SCHEMA });
    const handler = lanes({ value: avro<Order>({ registry: registry.url }), outputFormats: { [out]: enriched } }, async (record, ctx) => {
      // No encode(): the declaration names the schema. The second value lacks `item`: the schema refuses it.
      ctx.send(out, { key: 'k', value: record.value!.id === 1 ? { id: 1, item: 'out' } : { id: 2 } });
    });

    try {
      // Act
      const response = await invoke(handler, records);
      const [retry] = await fetchRecords(`${group}.retry.5s`, 1);
      await produce(out, [{ key: 'marker', value: 'end' }]);
      const [written, ...after] = await fetchRecords(out, 2);

      // Assess: the first written in Confluent's wire format with the subject's id; the second not written, its record retried.
      expect(response).toEqual({ batchItemFailures: [] });
      const bytes = Buffer.from(written!.value!);
      expect([bytes[0], bytes.readInt32BE(1)]).toEqual([0, registry.register(`${out}-value`, ORDER_SCHEMA)]);
      expect({ ...(orderType.fromBuffer(bytes.subarray(5)) as Order) }).toEqual({ id: 1, item: 'out' });
      expect(after.map((r) => r.key?.toString())).toEqual(['marker']);
      expect(retry!.key?.toString()).toBe('bad');
      expect(facts(retry!).errorMessage).toMatch(/the value does not match Avro .*\(shop\.Order\) at item/);
    } finally {
      await handler.close();
    }
  });
});
