/**
 * The topics custom resource (src/serverless/topics-handler.ts) run as CloudFormation runs it: Create, Update and
 * Delete requests shaped as AWS documents them, against the local broker, each answered to a local server standing
 * in for the pre-signed ResponseURL.
 */
import { ConfigResourceTypes } from 'kafkajs';
import type { TopicsWorkRequest } from '../../src/serverless/topics-handler';
import { resourceEvent, startResponseServer } from './support/response-url';
import { topicsResourceInProcess } from './support/topics-resource';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from './support/stack';

jest.setTimeout(120_000);

// The worker's environment as the plugin writes it for plaintext Kafka; the brokers come with each request.
const workerEnv = { KAFKA_LANES_GROUP: 'unused-by-the-resource', KAFKA_LANES_KAFKA_SSL: 'false' };
const context = { getRemainingTimeInMillis: () => 120_000, logStreamName: '2026/12/03/[$LATEST]abcdef' };
/** The property the plugin writes for configured brokers. */
const BROKERS = KAFKA_BROKERS.join(',');

let server: Awaited<ReturnType<typeof startResponseServer>>;
const created: string[] = [];
const logs: Array<Record<string, unknown>> = [];
const requests: TopicsWorkRequest[] = [];
const handler = topicsResourceInProcess({ workerEnv, log: (line) => logs.push(line), requests });

beforeAll(async () => {
  server = await startResponseServer();
});
afterAll(async () => {
  await server.close();
  await deleteTopics(created);
});

async function topicsOf(names: readonly string[]): Promise<Record<string, { partitions: number; retentionMs?: string }>> {
  const admin = createKafka().admin();
  await admin.connect();
  try {
    const listed = new Set(await admin.listTopics());
    const present = names.filter((name) => listed.has(name));
    if (present.length === 0) return {};
    const metadata = await admin.fetchTopicMetadata({ topics: present });
    const configs = await admin.describeConfigs({ includeSynonyms: false, resources: present.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['retention.ms'] })) });
    return Object.fromEntries(
      metadata.topics.map((topic) => [
        topic.name,
        { partitions: topic.partitions.length, retentionMs: configs.resources.find((r) => r.resourceName === topic.name)?.configEntries[0]?.configValue },
      ]),
    );
  } finally {
    await admin.disconnect();
  }
}

describe('the topics custom resource on the local broker', () => {
  it('creates the source, every tier, the dead-letter topic and the outputs on Create, and answers SUCCESS with the brokers', async () => {
    // Prepare
    const group = uniqueName('cr');
    const source = uniqueName('cr-src');
    const output = uniqueName('cr-out');
    const names = [source, `${group}.retry.5s`, `${group}.retry.1m`, `${group}.dlq`, output];
    created.push(...names);
    const event = resourceEvent('Create', server.url('/create?X-Amz-Signature=abc'), {
      Brokers: BROKERS, Group: group, Tiers: ['5s', '1m'], Source: source, SourcePartitions: '3', Outputs: [output],
    });

    // Act
    await handler(event, context);

    // Assess: the answer as AWS documents it, PUT with an empty Content-Type
    const answer = server.answers.find((a) => a.path === '/create?X-Amz-Signature=abc')!;
    expect(answer.method).toBe('PUT');
    expect(answer.headers['content-type']).toBe('');
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.raw));
    expect(answer.body).toEqual({
      Status: 'SUCCESS',
      PhysicalResourceId: `kafka-lanes-topics:${group}`,
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
      Data: { BootstrapBrokers: BROKERS },
    });
    const topics = await topicsOf(names);
    expect(Object.keys(topics).sort()).toEqual([...names].sort());
    expect(topics[source]!.partitions).toBe(3);
    // The retry and dead-letter topics as `topics ensure` makes them: as many partitions as the source, kept 7 days.
    expect(topics[`${group}.retry.1m`]).toEqual({ partitions: 3, retentionMs: String(7 * 24 * 3_600_000) });
    expect(topics[output]!.partitions).toBe(3);
  });

  it('on Update, adds a new tier and a new output, grows the source, keeps the physical ID and deletes nothing', async () => {
    // Prepare
    const group = uniqueName('cr-up');
    const source = uniqueName('cr-up-src');
    const output = uniqueName('cr-up-out');
    created.push(source, `${group}.retry.5s`, `${group}.retry.10m`, `${group}.dlq`, output);
    const before = { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: source, SourcePartitions: '1' };
    await handler(resourceEvent('Create', server.url('/up-create'), before), context);
    const physical = server.answers.find((a) => a.path === '/up-create')!.body['PhysicalResourceId'] as string;

    // Act: 5s dropped, 10m and an output added, source grown
    const after = { Brokers: BROKERS, Group: group, Tiers: ['10m'], Source: source, SourcePartitions: '2', Outputs: [output] };
    await handler(resourceEvent('Update', server.url('/up'), after, { PhysicalResourceId: physical, OldResourceProperties: before }), context);

    // Assess
    expect(server.answers.find((a) => a.path === '/up')!.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: physical });
    const topics = await topicsOf([source, `${group}.retry.5s`, `${group}.retry.10m`, `${group}.dlq`, output]);
    expect(topics[source]!.partitions).toBe(2);
    // The dropped tier's topic stays: its copies may still be waiting.
    expect(Object.keys(topics).sort()).toEqual([source, `${group}.retry.5s`, `${group}.retry.10m`, `${group}.dlq`, output].sort());
  });

  it('refuses an Update that drops a retry tier while records wait in it, naming the tier, the topic and the count', async () => {
    // Prepare: tiers 5s and 1m; one copy waits in the 1m tier, which its trigger has not read.
    const group = uniqueName('cr-drop');
    const source = uniqueName('cr-drop-src');
    created.push(source, `${group}.retry.5s`, `${group}.retry.1m`, `${group}.dlq`);
    const before = { Brokers: BROKERS, Group: group, Tiers: ['5s', '1m'], Source: source, SourcePartitions: '1' };
    await handler(resourceEvent('Create', server.url('/drop-create'), before), context);
    const physical = server.answers.find((a) => a.path === '/drop-create')!.body['PhysicalResourceId'] as string;
    const producer = createKafka().producer();
    await producer.connect();
    await producer.send({ topic: `${group}.retry.1m`, messages: [{ key: 'c-1', value: 'a copy waiting for its retry' }] });
    await producer.disconnect();

    // Act: 1m dropped (the waiting copy would never run), then 5s dropped (nothing waits there)
    const dropsWaiting = { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: source, SourcePartitions: '1' };
    await handler(resourceEvent('Update', server.url('/drop-1m'), dropsWaiting, { PhysicalResourceId: physical, OldResourceProperties: before }), context);
    const dropsEmpty = { Brokers: BROKERS, Group: group, Tiers: ['1m'], Source: source, SourcePartitions: '1' };
    await handler(resourceEvent('Update', server.url('/drop-5s'), dropsEmpty, { PhysicalResourceId: physical, OldResourceProperties: before }), context);

    // Assess
    const refused = server.answers.find((a) => a.path === '/drop-1m')!.body;
    expect(refused).toMatchObject({ Status: 'FAILED', PhysicalResourceId: physical });
    expect(refused['Reason']).toContain(`retry tier \`1m\`: 1 record(s) in \`${group}.retry.1m\` its trigger (consumer group \`${group}.retry.1m\`) has not read`);
    expect(server.answers.find((a) => a.path === '/drop-5s')!.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: physical });
  });

  it('answers FAILED naming the topic and what Kafka or the check said, and keeps the physical ID on a failed Update', async () => {
    // Prepare: a source that does not exist and whose partitions are not declared
    const group = uniqueName('cr-fail');
    const missing = uniqueName('cr-missing');

    // Act
    await handler(resourceEvent('Update', server.url('/fail'), { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: missing }, { PhysicalResourceId: 'kafka-lanes-topics:old' }), context);

    // Assess
    const answer = server.answers.find((a) => a.path === '/fail')!.body;
    expect(answer['Status']).toBe('FAILED');
    expect(answer['PhysicalResourceId']).toBe('kafka-lanes-topics:old');
    expect(answer['Reason']).toContain(`\`${missing}\` does not exist`);
    expect(answer['Reason']).toContain(group);
    expect(answer['Reason']).toContain('provider log stream 2026/12/03/[$LATEST]abcdef');
    expect(answer['Reason']).toContain('worker log stream 2026/12/06/[$LATEST]worker');
    expect(await topicsOf([`${group}.retry.5s`, `${group}.dlq`])).toEqual({});
  });

  it("answers FAILED with Kafka's own error when the broker refuses a topic's settings", async () => {
    // Prepare: a replication factor the single local broker cannot give
    const group = uniqueName('cr-rf');
    const source = uniqueName('cr-rf-src');
    await createTopic(source, 1);
    created.push(source);

    // Act
    await handler(resourceEvent('Create', server.url('/rf'), { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: source, ReplicationFactor: '3' }), context);

    // Assess
    const answer = server.answers.find((a) => a.path === '/rf')!.body;
    expect(answer['Status']).toBe('FAILED');
    expect(answer['Reason']).toMatch(new RegExp(`topic \`${group}\\.(retry\\.5s|dlq)\`: INVALID_REPLICATION_FACTOR`));
  });

  it('deletes nothing on Delete unless asked, and then only the retry and dead-letter topics; both answer SUCCESS', async () => {
    // Prepare
    const group = uniqueName('cr-del');
    const source = uniqueName('cr-del-src');
    const output = uniqueName('cr-del-out');
    const owned = [`${group}.retry.5s`, `${group}.dlq`];
    created.push(source, output, ...owned);
    const properties = { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: source, SourcePartitions: '1', Outputs: [output] };
    await handler(resourceEvent('Create', server.url('/del-create'), properties), context);
    const physical = `kafka-lanes-topics:${group}`;

    // Act: a Delete as the stack's deletion sends it, then one with deleteOnRemove
    await handler(resourceEvent('Delete', server.url('/del-kept'), properties, { PhysicalResourceId: physical }), context);
    const kept = await topicsOf([source, output, ...owned]);
    await handler(resourceEvent('Delete', server.url('/del-asked'), { ...properties, DeleteOnRemove: 'true' }, { PhysicalResourceId: physical }), context);

    // Assess
    expect(Object.keys(kept).sort()).toEqual([source, output, ...owned].sort());
    for (const path of ['/del-kept', '/del-asked']) expect(server.answers.find((a) => a.path === path)!.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: physical });
    // Deletion is asynchronous in Kafka: wait for the metadata to drop them.
    for (let left = 50; left > 0 && Object.keys(await topicsOf(owned)).length > 0; left--) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(Object.keys(await topicsOf([source, output, ...owned])).sort()).toEqual([source, output].sort());
  });

  it('answers Delete SUCCESS at once when the brokers cannot be reached, and Create FAILED', async () => {
    // Prepare: nothing listens there
    const unreachable = topicsResourceInProcess({ workerEnv, requests });
    const properties = { Brokers: '127.0.0.1:1', Group: uniqueName('cr-down'), Tiers: ['5s'], Source: 'orders', DeleteOnRemove: 'true' };

    // Act
    await unreachable(resourceEvent('Delete', server.url('/down-delete'), properties, { PhysicalResourceId: 'kafka-lanes-topics:x' }), context);
    await unreachable(resourceEvent('Create', server.url('/down-create'), properties), { ...context, getRemainingTimeInMillis: () => 40_000 });

    // Assess
    expect(server.answers.find((a) => a.path === '/down-delete')!.body['Status']).toBe('SUCCESS');
    const failed = server.answers.find((a) => a.path === '/down-create')!.body;
    expect(failed['Status']).toBe('FAILED');
    expect(failed['Reason']).toMatch(/ECONNREFUSED|Connection error|not done within/);
    expect(requests.filter((request) => request.ResourceProperties['Group'] === properties.Group).map((request) => request.RequestType)).toEqual(['Delete', 'Create']);
  });

  it('on an Update after its cluster changed, ensures the topics on the new cluster and answers its brokers', async () => {
    // Prepare: created on cluster A. Cluster B is the same local broker under another name (one broker here); its
    // topics are deleted first, so it is as empty as the new cluster a replacement makes.
    const group = uniqueName('cr-moved');
    const source = uniqueName('cr-moved-src');
    const names = [source, `${group}.retry.5s`, `${group}.dlq`];
    created.push(...names);
    const clusterA = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop-kafka/aaaaaaaa-0000-0000-0000-000000000000-1';
    const clusterB = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop-kafka/bbbbbbbb-0000-0000-0000-000000000000-1';
    const seen: TopicsWorkRequest[] = [];
    const resource = topicsResourceInProcess({ workerEnv, clusters: { [clusterA]: BROKERS, [clusterB]: `localhost:${BROKERS.split(':')[1]}` }, requests: seen });
    const before = { Group: group, Tiers: ['5s'], Source: source, SourcePartitions: '2', Cluster: clusterA, Listener: 'plaintext' };
    await resource(resourceEvent('Create', server.url('/moved-create'), before), context);
    await deleteTopics(names);
    for (let left = 50; left > 0 && Object.keys(await topicsOf(names)).length > 0; left--) await new Promise((resolve) => setTimeout(resolve, 200));

    // Act: the stack replaced the cluster: the resource's `Cluster` property changed, so CloudFormation sends an Update
    await resource(resourceEvent('Update', server.url('/moved'), { ...before, Cluster: clusterB }, { PhysicalResourceId: `kafka-lanes-topics:${group}`, OldResourceProperties: before }), context);

    // Assess: the worker was given B's brokers, the topics are there again, and the functions get B's brokers
    expect(seen.map((request) => [request.RequestType, request.brokers])).toEqual([['Create', [BROKERS]], ['Update', [`localhost:${BROKERS.split(':')[1]}`]]]);
    expect(server.answers.find((a) => a.path === '/moved')!.body).toMatchObject({ Status: 'SUCCESS', Data: { BootstrapBrokers: `localhost:${BROKERS.split(':')[1]}` } });
    expect(Object.keys(await topicsOf(names)).sort()).toEqual([...names].sort());
  });

  it("lets a rollback's Update drop a tier while copies wait in it, where a user's Update is refused", async () => {
    // Prepare: an update added tier 1m and failed later; a copy already waits in 1m's topic
    const group = uniqueName('cr-back');
    const source = uniqueName('cr-back-src');
    created.push(source, `${group}.retry.5s`, `${group}.retry.1m`, `${group}.dlq`);
    const before = { Brokers: BROKERS, Group: group, Tiers: ['5s'], Source: source, SourcePartitions: '1' };
    const added = { ...before, Tiers: ['5s', '1m'] };
    await handler(resourceEvent('Create', server.url('/back-create'), added), context);
    const producer = createKafka().producer();
    await producer.connect();
    await producer.send({ topic: `${group}.retry.1m`, messages: [{ key: 'c-1', value: 'a copy written before the rollback' }] });
    await producer.disconnect();
    const rollingBack = topicsResourceInProcess({ workerEnv, stackStatus: 'UPDATE_ROLLBACK_IN_PROGRESS', log: (line) => logs.push(line) });

    // Act: CloudFormation's rollback puts the old properties back
    await rollingBack(resourceEvent('Update', server.url('/back'), before, { PhysicalResourceId: `kafka-lanes-topics:${group}`, OldResourceProperties: added }), context);

    // Assess: the rollback goes through; the waiting copy is logged and its topic kept
    expect(server.answers.find((a) => a.path === '/back')!.body).toMatchObject({ Status: 'SUCCESS' });
    expect(logs).toContainEqual(expect.objectContaining({ level: 'WARN', message: 'rollback drops retry tiers while records wait in them', group }));
    expect(Object.keys(await topicsOf([`${group}.retry.1m`]))).toEqual([`${group}.retry.1m`]);
  });

  it('answers a Delete without deleteOnRemove without invoking the worker, and one whose worker fails SUCCESS', async () => {
    // Prepare
    const group = uniqueName('cr-gone');
    const seen: TopicsWorkRequest[] = [];
    const resource = topicsResourceInProcess({ workerEnv, requests: seen });
    const properties = { Group: group, Tiers: ['5s'], Source: 'orders', Cluster: 'arn:aws:kafka:eu-west-1:123456789012:cluster/gone/cccccccc-0000-0000-0000-000000000000-1', Listener: 'iam' };

    // Act: the stack is being deleted; its cluster is already gone (MSK answers NotFound)
    await resource(resourceEvent('Delete', server.url('/gone-kept'), properties, { PhysicalResourceId: `kafka-lanes-topics:${group}` }), context);
    await resource(resourceEvent('Delete', server.url('/gone-asked'), { ...properties, DeleteOnRemove: 'true' }, { PhysicalResourceId: `kafka-lanes-topics:${group}` }), context);

    // Assess
    expect(seen).toEqual([]);
    for (const path of ['/gone-kept', '/gone-asked']) expect(server.answers.find((a) => a.path === path)!.body).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: `kafka-lanes-topics:${group}` });
  });
});
