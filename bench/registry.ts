/**
 * bench:registry — what reading a registry format costs: decode µs per record (schema cached, the median of ROUNDS
 * rounds of N records) and the KiB a handler loads for it (the library bundled alone with esbuild, minified, for
 * node), for kafka-lanes' reader (avsc, protobufjs, its own registry client) and, side by side, the candidates it
 * was chosen over when they are installed in REGISTRY_CANDIDATES (a scratch folder; nothing here installs them):
 *
 *   npm install --prefix /tmp/registry-candidates @kafkajs/confluent-schema-registry @confluentinc/schemaregistry @aws-lambda-powertools/kafka
 *   REGISTRY_CANDIDATES=/tmp/registry-candidates npm run bench:registry
 *
 * Every row decodes the same Avro record framed in Confluent's wire format (Powertools' utility takes the schema
 * inline and base64, as it reads the Lambda event); the registry is the test stand-in on a loopback port.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as avsc from 'avsc';
import * as protobufjs from 'protobufjs';
import { build } from 'esbuild';
import { RegistryReader } from '../src/registry/reader';
import { confluentFrame, writeMessageIndexes } from '../src/registry/wire-format';
import { RegistryStandIn } from '../test/integration/support/registry-stand-in';

const N = Number(process.env.N ?? 20_000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const CANDIDATES = process.env.REGISTRY_CANDIDATES;

const ORDER = JSON.stringify({
  type: 'record',
  name: 'Order',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'customer', type: 'string' },
    { name: 'amount', type: 'double' },
    { name: 'items', type: { type: 'array', items: 'string' } },
  ],
});
const ORDER_VALUE = { id: 42, customer: 'customer-0042', amount: 99.5, items: ['sku-1', 'sku-2', 'sku-3'] };
const PROTO = 'syntax = "proto3";\nmessage Order { int64 id = 1; string customer = 2; double amount = 3; repeated string items = 4; }\n';

/** Median µs per record of `decode` over ROUNDS rounds of N calls (after a warm-up round). */
async function perRecord(decode: () => unknown): Promise<number> {
  const rounds: number[] = [];
  for (let round = -1; round < ROUNDS; round += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i += 1) await decode();
    if (round >= 0) rounds.push(Number(process.hrtime.bigint() - start) / 1e3 / N);
  }
  return rounds.sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
}

/** KiB of `entry` bundled alone (minified, node, the AWS SDK left out as the Lambda runtime has it). */
async function bundleKiB(contents: string, resolveDir: string): Promise<number> {
  const result = await build({
    stdin: { contents, resolveDir, loader: 'ts' },
    bundle: true, platform: 'node', target: 'node22', format: 'cjs', minify: true, write: false, logLevel: 'silent',
    external: ['@aws-sdk/*', '@smithy/*'],
  });
  return result.outputFiles.reduce((n, f) => n + f.contents.length, 0) / 1024;
}

async function main(): Promise<void> {
  const registry = await new RegistryStandIn().start();
  const rows: Array<[string, number, number]> = [];
  try {
    const avroId = registry.register('bench-value', ORDER);
    const protoId = registry.register('bench-proto-value', PROTO, 'PROTOBUF');
    const avroBytes = confluentFrame(avroId, avsc.Type.forSchema(JSON.parse(ORDER) as avsc.Schema).toBuffer(ORDER_VALUE));
    const Order = protobufjs.parse(PROTO).root.lookupType('Order');
    const protoBytes = Buffer.concat([confluentFrame(protoId, Buffer.alloc(0)), writeMessageIndexes([0]), Buffer.from(Order.encode(Order.fromObject(ORDER_VALUE)).finish())]);

    const root = join(__dirname, '..');
    const readerKiB = await bundleKiB(`export { RegistryReader } from './src/registry/reader';`, root);
    const avroReader = new RegistryReader('avro', { registry: registry.url });
    const protoReader = new RegistryReader('protobuf', { registry: registry.url });
    rows.push(['kafka-lanes avro() (avsc)', await perRecord(() => avroReader.decode(avroBytes)), readerKiB]);
    rows.push(['kafka-lanes protobuf() (protobufjs)', await perRecord(() => protoReader.decode(protoBytes)), readerKiB]);

    if (CANDIDATES !== undefined) {
      const load = createRequire(join(CANDIDATES, 'package.json'));
      const modules = join(CANDIDATES, 'node_modules');
      {
        const { SchemaRegistry } = load('@kafkajs/confluent-schema-registry') as { SchemaRegistry: new (c: object) => { decode(b: Buffer): Promise<unknown> } };
        const client = new SchemaRegistry({ host: registry.url });
        rows.push(['@kafkajs/confluent-schema-registry (avsc)', await perRecord(() => client.decode(avroBytes)), await bundleKiB(`export { SchemaRegistry } from '@kafkajs/confluent-schema-registry';`, modules)]);
      }
      {
        const sr = load('@confluentinc/schemaregistry') as {
          SchemaRegistryClient: new (c: object) => unknown;
          AvroDeserializer: new (client: unknown, type: number, config: object) => { deserialize(topic: string, b: Buffer): Promise<unknown> };
          SerdeType: { VALUE: number };
        };
        const client = new sr.SchemaRegistryClient({ baseURLs: [registry.url] });
        const deserializer = new sr.AvroDeserializer(client, sr.SerdeType.VALUE, {});
        rows.push(['@confluentinc/schemaregistry (avsc)', await perRecord(() => deserializer.deserialize('bench', avroBytes)), await bundleKiB(`export { AvroDeserializer, SchemaRegistryClient } from '@confluentinc/schemaregistry';`, modules)]);
      }
      {
        const { kafkaConsumer, SchemaType } = load('@aws-lambda-powertools/kafka') as {
          kafkaConsumer: (h: (event: { records: Array<{ value: unknown }> }) => Promise<unknown>, c: object) => (event: object, context: object) => Promise<unknown>;
          SchemaType: { AVRO: string };
        };
        // Powertools reads the Lambda event, schema inline: one event of one record per decode, value base64 without a frame.
        const value = avroBytes.subarray(5).toString('base64');
        const event = { eventSource: 'SelfManagedKafka', records: { 'bench-0': [{ topic: 'bench', partition: 0, offset: 0, timestamp: 0, timestampType: 'CREATE_TIME', key: null, value, headers: [] }] } };
        let out: unknown;
        const handler = kafkaConsumer(async (e) => (out = e.records[0]!.value), { value: { type: SchemaType.AVRO, schema: ORDER } });
        rows.push(['@aws-lambda-powertools/kafka (avro-js, inline)', await perRecord(async () => (await handler(event, {}), out)), await bundleKiB(`export { kafkaConsumer } from '@aws-lambda-powertools/kafka';`, modules)]);
      }
    }
  } finally {
    await registry.stop();
  }
  console.log(`bench:registry: decode of one Avro/Protobuf order (4 fields), schema cached, median of ${ROUNDS} rounds of ${N}, node ${process.version}`);
  console.log(`${'library'.padEnd(48)}${'µs/record'.padStart(10)}${'KiB bundled'.padStart(13)}`);
  for (const [name, micros, kib] of rows) console.log(`${name.padEnd(48)}${micros.toFixed(2).padStart(10)}${kib.toFixed(0).padStart(13)}`);
}

void main();
