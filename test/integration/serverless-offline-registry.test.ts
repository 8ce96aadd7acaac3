/**
 * An Avro service and a Protobuf service end to end under a real `serverless offline start` on the local broker
 * (test/fixtures/registry-service), their values read through a schema registry: the registry STAND-IN of
 * support/registry-stand-in.ts, since no real registry runs on these machines. Producers frame their values as
 * Confluent's serializers do; a record framed wrong is dead-lettered with the producer's bytes; every group's
 * completion group reaches the end offsets (nothing lost).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as avsc from 'avsc';
import * as protobufjs from 'protobufjs';
import { Redis } from 'ioredis';
import type { Admin, Producer } from 'kafkajs';
import { freePort, startServerlessOffline, type OfflineProcess } from '../../infra/local/demo/offline-process';
import { waitForTopicsReady } from '../../src/admin';
import { completionGroupId } from '../../src/committer';
import { deadLetterTopic, retryTopic } from '../../src/options';
import { confluentFrame, writeMessageIndexes } from '../../src/registry/wire-format';
import { fetchRecords } from './support/kafka-events';
import { RegistryStandIn } from './support/registry-stand-in';
import { createKafka, deleteTopics, REDIS_URL, uniqueName } from './support/stack';

const SERVICE = join(__dirname, '..', 'fixtures', 'registry-service');
const run = uniqueName('kl-offline-registry');
const logFile = join(SERVICE, '..', '..', '..', '.local', `${run}.log`);
const avroTopic = uniqueName('kl-avro');
const protoTopic = uniqueName('kl-proto');
const avroGroup = uniqueName('kl-avro-grp');
const protoGroup = uniqueName('kl-proto-grp');
const groupTopics = [avroGroup, protoGroup].flatMap((group) => [retryTopic(group, '1s'), deadLetterTopic(group)]);

const ORDER_SCHEMA = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'long' }, { name: 'item', type: 'string' }] });
const SHIPMENT_PROTO = 'syntax = "proto3";\nmessage Shipment { string id = 1; int64 grams = 2; }\n';

const registry = new RegistryStandIn();
let offline: OfflineProcess;
let redis: Redis;
let admin: Admin;
let producer: Producer;

async function waitFor<T>(what: () => Promise<T>, done: (value: T) => boolean, description: string, timeoutMs = 90_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T;
  do {
    last = await what();
    if (done(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 250));
  } while (Date.now() < until);
  throw new Error(`timed out waiting for ${description}; last: ${JSON.stringify(last)}`);
}

const seen = async (fn: string): Promise<Array<Record<string, unknown>>> =>
  (await redis.lrange(`kl-test:${run}:${fn}:seen`, 0, -1)).map((text) => JSON.parse(text) as Record<string, unknown>);

async function atEndOffsets(group: string, topic: string): Promise<void> {
  const ends = await admin.fetchTopicOffsets(topic);
  await waitFor(
    async () => new Map(((await admin.fetchOffsets({ groupId: completionGroupId(group), topics: [topic] }))[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)] as const)),
    // A partition no record went to has nothing to commit.
    (offsets) => ends.every(({ partition, high }) => Number(high) === 0 || offsets.get(partition) === Number(high)),
    `the completion group of ${group} at the end offsets`,
  );
}

beforeAll(async () => {
  await registry.start();
  redis = new Redis(REDIS_URL);
  admin = createKafka().admin();
  await admin.connect();
  producer = createKafka().producer();
  await producer.connect();
  const topics = [...[avroTopic, protoTopic].map((topic) => ({ topic, numPartitions: 2 })), ...groupTopics.map((topic) => ({ topic, numPartitions: 2 }))];
  await admin.createTopics({ topics, waitForLeaders: false });
  await waitForTopicsReady(admin, topics.map((t) => t.topic), { timeoutMs: 60_000 });
  mkdirSync(join(SERVICE, '..', '..', '..', '.local'), { recursive: true });
  offline = await startServerlessOffline({
    cwd: SERVICE,
    logFile,
    env: {
      KL_TEST_RUN: run,
      KL_TEST_LAMBDA_PORT: String(await freePort()),
      KL_TEST_REGISTRY_URL: registry.url,
      KL_TEST_AVRO_TOPIC: avroTopic,
      KL_TEST_AVRO_GROUP: avroGroup,
      KL_TEST_PROTO_TOPIC: protoTopic,
      KL_TEST_PROTO_GROUP: protoGroup,
    },
  });
});

afterAll(async () => {
  const code = await offline?.stop();
  await producer?.disconnect();
  await admin?.disconnect();
  await deleteTopics([avroTopic, protoTopic, ...groupTopics]);
  redis?.disconnect();
  await registry.stop();
  expect(code).toBe(0);
});

describe('serverless offline with registry formats (against the registry stand-in)', () => {
  it('runs an Avro service end to end: values decoded in per-key order, a wrong frame dead-lettered with its bytes, the completion group at the end', async () => {
    // Prepare: what a producer with Confluent's Avro serializer writes, and one record of a producer without it.
    const id = registry.register(`${avroTopic}-value`, ORDER_SCHEMA);
    const type = avsc.Type.forSchema(JSON.parse(ORDER_SCHEMA) as avsc.Schema);
    const messages = [];
    for (let i = 1; i <= 10; i += 1) messages.push({ key: `k${i % 3}`, value: confluentFrame(id, type.toBuffer({ id: i, item: `item-${i}` })) });
    const unframed = Buffer.from('{"id":99,"item":"plain json"}');
    messages.push({ key: 'k0', value: unframed });

    // Act
    await producer.send({ topic: avroTopic, messages });
    const values = await waitFor(() => seen('orders'), (list) => list.length >= 10, '10 orders handled');
    const [deadLetter] = await fetchRecords(deadLetterTopic(avroGroup), 1);
    await atEndOffsets(avroGroup, avroTopic);

    // Assess
    for (const key of ['k0', 'k1', 'k2']) {
      const ids = values.filter((v) => v['key'] === key).map((v) => v['id'] as number);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
    expect(values.map((v) => v['item']).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `item-${i + 1}`).sort());
    expect(Buffer.from(deadLetter!.value!)).toEqual(unframed);
  });

  it('runs a Protobuf service end to end: 64-bit integers kept exact, the completion group at the end', async () => {
    // Prepare
    const id = registry.register(`${protoTopic}-value`, SHIPMENT_PROTO, 'PROTOBUF');
    const Shipment = protobufjs.parse(SHIPMENT_PROTO).root.lookupType('Shipment');
    const messages = Array.from({ length: 6 }, (_, i) => ({
      key: `s${i % 2}`,
      value: Buffer.concat([confluentFrame(id, Buffer.alloc(0)), writeMessageIndexes([0]), Buffer.from(Shipment.encode(Shipment.fromObject({ id: `s-${i}`, grams: `900719925474099${i}` })).finish())]),
    }));

    // Act
    await producer.send({ topic: protoTopic, messages });
    const values = await waitFor(() => seen('shipments'), (list) => list.length >= 6, '6 shipments handled');
    await atEndOffsets(protoGroup, protoTopic);

    // Assess
    expect(values.map((v) => `${v['id']}:${v['grams']}`).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `s-${i}:900719925474099${i}`));
  });
});
