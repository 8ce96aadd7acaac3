import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as avsc from 'avsc';
import * as protobufjs from 'protobufjs';
import { runCliCaptured } from '../support/cli';
import { fetchRecords } from '../support/kafka-events';
import { RegistryStandIn } from '../support/registry-stand-in';
import { createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from '../support/stack';

const BROKERS = KAFKA_BROKERS.join(',');
const created: string[] = [];
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kl-produce-'));
});

afterAll(async () => {
  await deleteTopics(created);
  await rm(dir, { recursive: true, force: true });
});

async function topic(partitions: number): Promise<string> {
  const name = uniqueName('produce');
  await createTopic(name, partitions);
  created.push(name);
  return name;
}

describe('kafka-lanes produce', () => {
  it('writes value arguments as JSON with the key and headers given, and says where each landed', async () => {
    // Prepare
    const name = await topic(1);

    // Act
    const run = await runCliCaptured('produce', name, '{"orderId":"o-1","amount":30}', '{ "orderId": "o-2", "amount": 0 }', '--key', 'c-1', '--header', 'trace=t-1', '--brokers', BROKERS);

    // Assess
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.out).toBe(`${name}-0@0 key c-1\n${name}-0@1 key c-1\n2 record(s) written to ${name} (acks=all)\n`);
    const records = await fetchRecords(name, 2);
    expect(records.map((r) => [String(r.key), String(r.value)])).toEqual([
      ['c-1', '{"orderId":"o-1","amount":30}'],
      ['c-1', '{"orderId":"o-2","amount":0}'],
    ]);
    expect(records[0]!.headers).toEqual([{ name: 'trace', value: Buffer.from('t-1') }]);
  });

  it('reads keyed lines from a file and keeps their order per key', async () => {
    const name = await topic(1);
    const file = join(dir, 'orders.txt');
    await writeFile(file, 'c-1|{"seq":1}\nc-2|{"seq":1}\n\nc-1|{"seq":2}\n');

    const run = await runCliCaptured('produce', name, '--file', file, '--key-separator', '|', '--brokers', BROKERS);

    expect(run.code).toBe(0);
    const records = await fetchRecords(name, 3);
    expect(records.map((r) => `${String(r.key)} ${String(r.value)}`)).toEqual([
      'c-1 {"seq":1}',
      'c-2 {"seq":1}',
      'c-1 {"seq":2}',
    ]);
  });

  it('refuses a value that is not JSON before connecting, naming it', async () => {
    const run = await runCliCaptured('produce', 'any-topic', '{orderId: o-1}', '--brokers', BROKERS);
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/Expected JSON in argument 1, got `\{orderId: o-1\}`/);
  });

  it('names a refused broker connection as such', async () => {
    const run = await runCliCaptured('produce', 'any-topic', '1', '--brokers', '127.0.0.1:1');
    expect(run.code).toBe(1);
    expect(run.err).toBe('kafka-lanes: Kafka (127.0.0.1:1) not reachable: connection refused (nothing listens there) at 127.0.0.1:1\n');
  });

  describe('through a schema registry (the registry stand-in: no real registry runs here)', () => {
    const registry = new RegistryStandIn();
    beforeAll(() => registry.start());
    afterAll(() => registry.stop());

    const ORDER = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'item', type: 'string' }] });

    it("writes Avro values in Confluent's wire format, registering the schema under <topic>-value first", async () => {
      // Prepare
      const name = await topic(1);
      const schema = join(dir, 'order.avsc');
      await writeFile(schema, ORDER);

      // Act
      const run = await runCliCaptured('produce', name, '{"id":1,"item":"a"}', '{"id":2,"item":"b"}', '--value-format', 'avro', '--value-schema', schema, '--schema-registry', registry.url, '--brokers', BROKERS);

      // Assess: framed with the id the registry gave the subject; each decodes with the schema.
      expect(run).toMatchObject({ code: 0, err: '' });
      expect(run.out).toContain(`2 record(s) written to ${name} (acks=all, avro under subject ${name}-value)`);
      const id = registry.register(`${name}-value`, ORDER);
      const type = avsc.Type.forSchema(JSON.parse(ORDER) as avsc.Schema);
      const records = await fetchRecords(name, 2);
      expect(records.map((r) => Buffer.from(r.value!).readInt32BE(1))).toEqual([id, id]);
      expect(records.map((r) => ({ ...(type.fromBuffer(Buffer.from(r.value!).subarray(5)) as object) }))).toEqual([{ id: 1, item: 'a' }, { id: 2, item: 'b' }]);
    });

    it('writes Protobuf records of a named message, with its message indexes, under the subject given', async () => {
      // Prepare
      const name = await topic(1);
      const proto = 'syntax = "proto3";\npackage shop;\nmessage Envelope { string source = 1; }\nmessage Shipment { string id = 1; int64 grams = 2; }\n';
      const schema = join(dir, 'shipment.proto');
      await writeFile(schema, proto);
      const Shipment = protobufjs.parse(proto, { keepCase: true }).root.lookupType('shop.Shipment');

      // Act
      const run = await runCliCaptured('produce', name, '--records', '{"key":"s-1","value":{"id":"s-1","grams":"9007199254740993"}}', '--value-format', 'protobuf', '--value-schema', schema, '--message-type', 'shop.Shipment', '--subject', 'shipments', '--schema-registry', registry.url, '--brokers', BROKERS);

      // Assess: magic byte, the subject's id, message indexes [1] (zigzag 0x02 0x02), then the message.
      expect(run).toMatchObject({ code: 0, err: '' });
      const [record] = await fetchRecords(name, 1);
      const bytes = Buffer.from(record!.value!);
      expect(bytes.readInt32BE(1)).toBe(registry.register('shipments', proto, 'PROTOBUF'));
      expect([...bytes.subarray(5, 7)]).toEqual([2, 2]);
      expect(Shipment.toObject(Shipment.decode(bytes.subarray(7)), { longs: String })).toEqual({ id: 's-1', grams: '9007199254740993' });
    });

    it('refuses, before writing anything, a value the schema does not take and a format without its schema, naming them', async () => {
      // Prepare
      const name = await topic(1);
      const schema = join(dir, 'order-refused.avsc');
      await writeFile(schema, ORDER);

      // Act
      const mismatch = await runCliCaptured('produce', name, '{"id":1,"item":"a"}', '{"id":"two"}', '--value-format', 'avro', '--value-schema', schema, '--schema-registry', registry.url, '--brokers', BROKERS);
      const noSchema = await runCliCaptured('produce', name, '{"id":1}', '--value-format', 'avro', '--schema-registry', registry.url, '--brokers', BROKERS);
      const noFormat = await runCliCaptured('produce', name, '{"id":1}', '--value-schema', schema, '--brokers', BROKERS);
      await runCliCaptured('produce', name, '"marker"', '--brokers', BROKERS);
      const written = await fetchRecords(name, 1);

      // Assess
      expect(mismatch.code).toBe(1);
      expect(mismatch.err).toMatch(new RegExp(`Record 2 cannot be written as avro under subject ${name}-value: the value does not match Avro .* at id, item`));
      expect(noSchema.err).toMatch(/Expected `--value-schema <file>` and `--schema-registry <url>` with `--value-format avro`, got no --value-schema/);
      expect(noFormat.err).toMatch(/Expected `--value-format avro\|protobuf\|json-schema` with `--value-schema`, got none/);
      expect(written.map((r) => String(r.value))).toEqual(['"marker"']);
    });
  });
});
