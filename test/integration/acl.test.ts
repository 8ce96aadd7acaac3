/**
 * Least privilege, proven on a broker that enforces it. The IAM statements the serverless plugin generates for a
 * packaged function (src/serverless/iam.ts) are turned into Kafka ACLs with AWS's action-to-ACL mapping for MSK
 * IAM access control (support/msk-acls.ts), for one SCRAM user per role, on a second local broker with an
 * authorizer that allows nothing else (support/sasl-broker.ts). Then:
 * - under exactly those ACLs, the stack's topics resource (its Create, Update and Delete), `topics ensure` (as the
 *   operator docs/deploy.md describes), the source trigger's reads, the processor's hand-off of a failing record and
 *   its `ctx.send` output, the retry tier's trigger's reads and the retry function's run of the copy and its
 *   dead-letter write (as the retry function's user), and the committer's commits of
 *   the completion group, its reads of the triggers' positions, its group figures, its re-drive write and a
 *   recovery's reads all succeed;
 * - without any one granted action, a named operation is refused by Kafka, except the actions listed in
 *   `NOT_PROVABLE` (why each, beside it) and those another statement of the same role grants again.
 * The statements' AWS API actions (`kafka:GetBootstrapBrokers`, `ec2:*`, `logs:*`, `secretsmanager:*`) are not
 * Kafka requests: they are outside this proof.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Context } from 'aws-lambda';
import { Redis } from 'ioredis';
import type { IHeaders, Kafka } from 'kafkajs';
import { lanes } from '../../src';
import { ensureTopics } from '../../src/admin';
import { CompletionStore } from '../../src/completion/store';
import { eventSourcePositions, MemberlessOffsetCommitter, OffsetFetchRefusedError, runCommitter } from '../../src/committer';
import { encodeKafkaEvent, type KafkaRecordInput } from '../../src/event';
import { readHandOffHeaders } from '../../src/handoff';
import { readGroupFigures } from '../../src/admin';
import { kafkaRecordLog, readRange } from '../../src/recovery/read-range';
import { groupGrants, mskArns } from '../../src/serverless/iam';
import type { Statement } from '../../src/serverless/types';
import { planFunction } from '../../src/serverless/plan';
import type { CustomResourceEvent } from '../../src/serverless/custom-resource';
import { resourceEvent, startResponseServer } from './support/response-url';
import { topicsResourceInProcess } from './support/topics-resource';
import { contextWithin } from './support/kafka-events';
import { aclsFor, grantsOf, refusalOf, setAcls } from './support/msk-acls';
import { startSaslBroker, withAdmin, type SaslBroker, type ScramUser } from './support/sasl-broker';
import { REDIS_URL, uniqueName } from './support/stack';
import { awsSecretsEnv, startAwsEmulator } from './support/aws-secrets';

jest.setTimeout(180_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

type Role = 'handler' | 'retry' | 'committer' | 'operator' | 'topics';
const USERS: Readonly<Record<Role, ScramUser>> = {
  handler: { username: 'orders-handler', password: `h-${randomBytes(6).toString('hex')}` },
  retry: { username: 'orders-retry', password: `r-${randomBytes(6).toString('hex')}` },
  committer: { username: 'orders-committer', password: `c-${randomBytes(6).toString('hex')}` },
  operator: { username: 'orders-operator', password: `o-${randomBytes(6).toString('hex')}` },
  topics: { username: 'orders-topics', password: `t-${randomBytes(6).toString('hex')}` },
};
const ROLES = ['handler', 'retry', 'committer', 'operator', 'topics'] as const;
const principal = (role: Role): string => `User:${USERS[role].username}`;

/**
 * Granted, yet no operation of Apache Kafka can be shown to need it (each stays in the generated plan, asserted
 * below; docs/deploy.md, "IAM", says why).
 */
const NOT_PROVABLE: Readonly<Record<string, string>> = {
  // KIP-679 (Kafka 3.0): an idempotent producer needs WRITE on a topic, no longer IDEMPOTENT_WRITE on the
  // cluster, so a broker of today takes the hand-off without it. MSK IAM documents it for idempotent producers.
  WriteDataIdempotently: 'KIP-679: idempotent producers need WRITE on a topic only',
  // DESCRIBE_CONFIGS on the cluster: no client of the framework reads the cluster's configs. AWS's Lambda guide
  // lists it among the permissions of the MSK trigger, whose pollers this test cannot run.
  DescribeClusterDynamicConfiguration: "read by the MSK trigger's pollers (AWS's Lambda guide), not by the framework's clients",
};

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const arns = mskArns(ARN);
const TIER = '1s';
const group = uniqueName('acl');
const topic = uniqueName('acl-src');
const retryTopic = `${group}.retry.${TIER}`;
const dlq = `${group}.dlq`;
const output = uniqueName('acl-out');

/**
 * The plan `serverless package` makes for a function with an MSK trigger (MSK IAM for the producers and the
 * committer), a declared output and a declared source (the topics resource creates and grows it).
 */
function planOf(forGroup: string, source: string, outputs: string[]) {
  return planFunction(
    { service: 'shop', stage: 'dev' },
    'orders',
    { handler: 'functions/orders.handler', events: [{ msk: { arn: ARN, topic: source } }] },
    { group: forGroup, retryTiers: [TIER], outputs, topics: { partitions: 1 } },
  );
}
const { plan, problems } = planOf(group, topic, [output]);
const grants = groupGrants(plan!, false);
/** The topics resource's statements for another group and source (its cases need fresh names). */
const topicsStatements = (forGroup: string, source: string): Statement[] => groupGrants(planOf(forGroup, source, [`${forGroup}-out`]).plan!, false).topics;

/**
 * What the deploy guide (docs/deploy.md) says the operator running `topics ensure` may do, on the topics of the
 * command: the source topic and the group's `<group>.` topics.
 */
function operatorStatements(forGroup: string, source: string): Statement[] {
  const guide = readFileSync(join(__dirname, '../../docs/deploy.md'), 'utf8');
  const listed = /whose role may create topics \(([^)]*)\)/.exec(guide.replace(/\s+#?\s*/g, ' '))?.[1];
  if (listed === undefined) throw new Error('docs/deploy.md: the deploy section no longer says what the operator may do');
  const actions = listed.split(',').map((action) => `kafka-cluster:${action.trim().replace(/^kafka-cluster:/, '')}`);
  return [
    { Effect: 'Allow', Action: actions.filter((a) => a === 'kafka-cluster:Connect'), Resource: arns.cluster },
    { Effect: 'Allow', Action: actions.filter((a) => a !== 'kafka-cluster:Connect'), Resource: [arns.topic(source), arns.topic(`${forGroup}.*`)] },
  ];
}

const statementsOf = (role: Role): Statement[] => (role === 'operator' ? operatorStatements(group, topic) : grants[role]);

/** The topics resource (provider and worker) as the topics user: its request answered to a local stand-in for S3. */
let answers: Awaited<ReturnType<typeof startResponseServer>>;
async function resourceAs(
  user: ScramUser,
  type: CustomResourceEvent['RequestType'],
  properties: Record<string, unknown>,
  old?: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const handler = topicsResourceInProcess({
    workerEnv: { KAFKA_LANES_GROUP: String(properties['Group']), KAFKA_LANES_SASL_MECHANISM: 'scram-sha-512', KAFKA_LANES_SASL_USERNAME: user.username, KAFKA_LANES_SASL_PASSWORD: user.password },
  });
  const path = `/${uniqueName('answer')}`;
  const physical = { PhysicalResourceId: `kafka-lanes-topics:${String(properties['Group'])}`, ...(old === undefined ? {} : { OldResourceProperties: old }) };
  await handler(resourceEvent(type, answers.url(path), { Brokers: broker.brokers.join(','), ...properties }, type === 'Create' ? {} : physical), { getRemainingTimeInMillis: () => 60_000 });
  return answers.answers.find((answer) => answer.path === path)!.body;
}
/** Its Create, failing with the reason it answered. */
async function createTopicsAs(user: ScramUser, properties: Record<string, unknown>): Promise<void> {
  const answer = await resourceAs(user, 'Create', properties);
  if (answer['Status'] !== 'SUCCESS') throw new Error(String(answer['Reason']));
}

let broker: SaslBroker;
let redis: Redis;

beforeAll(async () => {
  expect(problems).toEqual([]);
  broker = await startSaslBroker(Object.values(USERS));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  answers = await startResponseServer();
  for (const role of ROLES) await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), statementsOf(role)));
});

afterAll(async () => {
  await answers?.close();
  redis?.disconnect();
  await broker?.stop();
});

// ------------------------------------------------------------------------------------------- operations

function headersOf(headers: IHeaders | undefined): Array<{ name: string; value: Buffer }> {
  return Object.entries(headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).filter((one) => one !== undefined).map((one) => ({ name, value: Buffer.isBuffer(one) ? one : Buffer.from(String(one)) })),
  );
}

/**
 * What the Kafka trigger does in consumer group `groupId`: joins it, reads `count` records of `source` from the
 * group's committed offset (the earliest when none) and commits past them. Rejects with the consumer's error.
 */
async function readAs(kafka: Kafka, groupId: string, source: string, count: number): Promise<KafkaRecordInput[]> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, retry: { retries: 1, restartOnFailure: async () => false } });
  const records: KafkaRecordInput[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: source, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${records.length} of ${count} records of ${source}`)), 90_000);
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        clearTimeout(timer);
        reject(payload.error);
      });
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          records.push({
            topic: source, partition, offset: Number(message.offset), timestamp: Number(message.timestamp), timestampType: 'CREATE_TIME',
            key: message.key, value: message.value, headers: headersOf(message.headers),
          });
          if (records.length === count) {
            await consumer.commitOffsets([{ topic: source, partition, offset: String(Number(message.offset) + 1) }]);
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch((error: unknown) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  return records;
}

const eventOf = (records: readonly KafkaRecordInput[]) => encodeKafkaEvent({ source: 'aws:kafka', eventSourceArn: ARN, bootstrapServers: broker.brokers, records } as Parameters<typeof encodeKafkaEvent>[0]);

/** The deployed handler as the handler's user: `bad` fails every attempt (two), everything else succeeds. */
/**
 * The processor as `user`: its SCRAM credentials given in the options, or (`secret`) named by a Secrets Manager
 * secret that it reads at its first hand-off, as a deployed function with `kafka.auth: scram` does.
 */
function handlerAs(user: ScramUser, secret?: string) {
  return lanes(
    {
      group,
      flushIntervalMs: 20,
      retry: { tiers: [TIER], maxAttempts: 2, backoff: { type: 'fixed', delayMs: 100 } },
      redis: { url: REDIS_URL },
      kafka: {
        brokers: broker.brokers,
        sasl: secret === undefined ? { mechanism: 'scram-sha-512', username: user.username, password: user.password } : { mechanism: 'scram-sha-512', secret },
      },
    },
    async (record, ctx) => {
      if (String(record.key) === 'bad') throw new Error('refused by the test');
      if (String(record.key) === 'a') ctx.send(output, { key: 'a', value: { shipped: true } });
    },
  );
}

/** One committer run as the committer's user, as the deployed committer does it (a member-less commit). */
async function commitAs(user: ScramUser) {
  const kafka = broker.kafka(user, 'committer');
  const admin = kafka.admin();
  try {
    return await runCommitter({
      store: new CompletionStore(redis), group, committer: new MemberlessOffsetCommitter(kafka, group, { retries: 1 }),
      // What the triggers committed in their own groups, read as the deployed committer reads it.
      eventSource: eventSourcePositions(async () => {
        await admin.connect();
        return admin;
      }, group),
    });
  } finally {
    await admin.disconnect();
  }
}

/** One idempotent, acks=all write (as the hand-off writer and the committer's re-drive make them). */
async function writeAs(kafka: Kafka, to: string): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
  await producer.connect();
  try {
    await producer.send({ topic: to, acks: -1, messages: [{ key: 'probe', value: 'probe' }] });
  } finally {
    await producer.disconnect();
  }
}

/** `topics ensure` as the operator (the command's library call, with the operator's client). */
async function ensureAs(kafka: Kafka, forGroup: string, source: string, partitions: number): Promise<void> {
  await withAdmin(kafka, (admin) => ensureTopics(admin, { group: forGroup, topics: [{ topic: source, partitions }], tiers: [TIER], readyTimeoutMs: 30_000 }));
}

async function committedOf(groupId: string, topics: string[]): Promise<Record<string, string>> {
  return withAdmin(broker.kafka(broker.admin), async (admin) => {
    const fetched = await admin.fetchOffsets({ groupId, topics });
    return Object.fromEntries(fetched.flatMap((t) => t.partitions.map((p) => [`${t.topic}-${p.partition}`, p.offset])));
  });
}

// ------------------------------------------------------------------------------------------- the proof

describe('least privilege on a broker with SCRAM users and an authorizer', () => {
  // The handler reads its SCRAM credentials from (an emulation of) Secrets Manager, as a deployed function does.
  const secretArn = `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${uniqueName('acl-scram')}-AbCdEf`;
  let secrets: Awaited<ReturnType<typeof startAwsEmulator>>;
  const saved = { ...process.env };
  beforeAll(async () => {
    secrets = await startAwsEmulator({ [secretArn]: JSON.stringify(USERS.handler) });
    Object.assign(process.env, awsSecretsEnv(secrets.endpoint));
  });
  afterAll(async () => {
    process.env = { ...saved };
    await secrets.close();
  });

  it('runs the topics resource, topics ensure, the processor, the retry function and the committer under exactly the generated grants', async () => {
    // Act: the stack's topics resource creates the topics (the declared source, the tier, the dead letters, the
    // output), and an Update finds them; the operator's `topics ensure` checks them.
    const properties = plan!.topics.properties;
    expect(await resourceAs(USERS.topics, 'Create', properties)).toMatchObject({ Status: 'SUCCESS', Data: { BootstrapBrokers: broker.brokers.join(',') } });
    expect(await resourceAs(USERS.topics, 'Update', properties)).toMatchObject({ Status: 'SUCCESS' });
    // An Update renaming the tier reads how far its trigger got before it lets the old tier go (nothing waits there yet).
    expect(await resourceAs(USERS.topics, 'Update', { ...properties, Tiers: ['2h'] }, properties)).toMatchObject({ Status: 'SUCCESS' });
    await ensureAs(broker.kafka(USERS.operator), group, topic, 1);
    await withAdmin(broker.kafka(broker.admin), async (admin) => {
      const producer = broker.kafka(broker.admin).producer();
      await producer.connect();
      await producer.send({ topic, acks: -1, messages: ['a', 'bad', 'c'].map((key) => ({ key, value: '{}' })) });
      await producer.disconnect();
      expect((await admin.listTopics()).sort()).toEqual(expect.arrayContaining([topic, retryTopic, dlq, output]));
    });

    // Act: the trigger reads the batch in group <group>; the processor runs it and hands `bad` off.
    const handler = handlerAs(USERS.handler, secretArn);
    try {
      const batch = await readAs(broker.kafka(USERS.handler, 'trigger'), group, topic, 3);
      expect(await handler(eventOf(batch), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });

    } finally {
      await handler.close();
    }
    // The retry tier's trigger reads the copy in group <group>.retry.1s with the retry function's role; the retry
    // function (the handler's code) runs it, and it fails again.
    const retry = handlerAs(USERS.retry);
    try {
      const copies = await readAs(broker.kafka(USERS.retry, 'retry-trigger'), retryTopic, retryTopic, 1);
      expect(readHandOffHeaders(copies[0]!.headers ?? [])).toMatchObject({ originOffset: 1, attempt: 2 });
      expect(await retry(eventOf(copies), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });
    } finally {
      await retry.close();
    }

    // Assess: the handler's producer authenticated with the secret's credentials, read once, signed.
    expect(secrets.calls).toEqual([{ target: 'secretsmanager.GetSecretValue', body: { SecretId: secretArn }, signed: true }]);
    // The dead letter is there, and the committer commits the source and the retry topic.
    const dead = await readAs(broker.kafka(broker.admin), uniqueName('acl-check'), dlq, 1);
    expect(readHandOffHeaders(dead[0]!.headers ?? [])).toMatchObject({ originOffset: 1, attempt: 2, reason: 'attempts-exhausted' });
    const run = await commitAs(USERS.committer);
    expect(run.moves.map((m) => [m.topic, m.to]).sort()).toEqual([[retryTopic, 1], [topic, 3]].sort());
    expect(await committedOf(`${group}.lanes`, [topic, retryTopic])).toEqual({ [`${topic}-0`]: '3', [`${retryTopic}-0`]: '1' });
    // The trigger committed its own groups: <group> on the source, <group>.retry.1s on the retry topic.
    expect(await committedOf(group, [topic])).toEqual({ [`${topic}-0`]: '3' });
    expect(await committedOf(retryTopic, [retryTopic])).toEqual({ [`${retryTopic}-0`]: '1' });
    // The committer's re-drive writes a copy to a retry tier.
    await writeAs(broker.kafka(USERS.committer), retryTopic);
    // Its group figures read the ends of the tracked partitions.
    await withAdmin(broker.kafka(USERS.committer), async (admin) => {
      const figures = await readGroupFigures({ group, store: new CompletionStore(redis), admin, partitions: run.partitions });
      expect(figures).toBeDefined();
    });
    // A recovery reads the partition's bounds and its records again, in a group of its own under the granted prefix.
    const source = kafkaRecordLog(broker.kafka(USERS.committer, 'recovery'), group);
    expect(await source.offsets(topic, 0)).toEqual({ low: 0, end: 3 });
    expect((await source.read(topic, 0, 0, 3)).map((record) => record.offset)).toEqual([0, 1, 2]);
    // The handler's output was written (as the handler's user), once.
    const shipped = await readAs(broker.kafka(broker.admin), uniqueName('acl-check'), output, 1);
    expect(shipped.map((record) => String(record.key))).toEqual(['a']);
    // Delete as a stack's deletion sends it: nothing deleted, SUCCESS.
    expect(await resourceAs(USERS.topics, 'Delete', properties)).toMatchObject({ Status: 'SUCCESS' });
    await withAdmin(broker.kafka(broker.admin), async (admin) => expect(await admin.listTopics()).toEqual(expect.arrayContaining([topic, retryTopic, dlq, output])));
  });

  it('reads a range again in one group per read: two concurrent recoveries do not disturb each other', async () => {
    const kafka = broker.kafka(USERS.committer, 'recovery');
    const [first, second] = await Promise.all([readRange(kafka, group, { topic, partition: 0, from: 0, end: 3 }), readRange(kafka, group, { topic, partition: 0, from: 1, end: 3 })]);
    expect([first.map((r) => r.offset), second.map((r) => r.offset)]).toEqual([[0, 1, 2], [1, 2]]);
  });
});

// ------------------------------------------------------------------------------------------- one grant less

/** `statements` without `action` in statement `index` (the statement gone when it had nothing else). */
function without(statements: readonly Statement[], index: number, action: string): Statement[] {
  return statements.flatMap((statement, i) => {
    if (i !== index) return [statement];
    const rest = statement.Action.filter((a) => a !== action);
    return rest.length === 0 ? [] : [{ ...statement, Action: rest }];
  });
}

const sameAcls = (a: Statement[], b: Statement[]): boolean => {
  const keys = (statements: Statement[]) => aclsFor('User:x', statements).map((acl) => JSON.stringify(acl)).sort().join('\n');
  return keys(a) === keys(b);
};

interface Removal {
  readonly role: Role;
  readonly index: number;
  readonly action: string;
}

const removals: Removal[] = ROLES.flatMap((role) =>
  statementsOf(role).flatMap((statement, index) =>
    statement.Action.filter((action) => action.startsWith('kafka-cluster:')).map((action) => ({ role, index, action })),
  ),
);
const short = (action: string): string => action.replace(/^kafka-cluster:/, '');
const notProvable = removals.filter((r) => NOT_PROVABLE[short(r.action)] !== undefined);
/** Another statement of the role grants the action on resources (ARNs, `*` a wildcard) covering all of this one's. */
const coveredElsewhere = ({ role, index, action }: Removal): boolean => {
  const resources = (statement: Statement): string[] => ([] as unknown[]).concat(statement.Resource).map(String);
  const matches = (pattern: string, arn: string): boolean => new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(arn);
  const removed = resources(statementsOf(role)[index]!);
  return statementsOf(role).some((other, i) => i !== index && other.Action.includes(action) && removed.every((arn) => resources(other).some((pattern) => matches(pattern, arn))));
};
// Granted again by another statement of the role (each statement of a role is there for a purpose of its own,
// e.g. the trigger's reads and the hand-off's writes both need Connect, and the retry function's reads of its tiers
// and its hand-off's writes to `<group>.retry.*` both need DescribeTopic): removing one copy changes no ACL, or the
// other statement's wildcard still covers its resources.
const grantedAgain = removals.filter((r) => !notProvable.includes(r) && (sameAcls(statementsOf(r.role), without(statementsOf(r.role), r.index, r.action)) || coveredElsewhere(r)));
const provable = removals.filter((r) => !notProvable.includes(r) && !grantedAgain.includes(r));

/** The smallest operation that needs statement `index` of `role`, and its name. */
function operationFor({ role, index, action }: Removal): { name: string; run: () => Promise<unknown>; names?: string } {
  const statement = statementsOf(role)[index]!;
  const resources = JSON.stringify(statement.Resource);
  if (role === 'operator') {
    const g = uniqueName('acl-op');
    const t = uniqueName('acl-op-src');
    // Creating topics takes every topic action but AlterTopic, which only growing a topic takes.
    const grows = action === 'kafka-cluster:AlterTopic';
    return {
      name: grows ? 'topics ensure growing a source topic' : 'topics ensure creating the topics',
      run: async () => {
        if (grows) await ensureAs(broker.kafka(broker.admin), g, t, 1);
        await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), without(operatorStatements(g, t), index, action)));
        await ensureAs(broker.kafka(USERS.operator), g, t, grows ? 2 : 1);
      },
    };
  }
  if (role === 'topics' && action === 'kafka-cluster:DescribeGroup') {
    const g = uniqueName('acl-cr');
    const t = uniqueName('acl-cr-src');
    // An Update that drops a tier first reads how far the tier's trigger got (its group's offsets).
    return {
      name: "the topics resource's Update dropping a retry tier",
      run: async () => {
        const created = { ...planOf(g, t, [`${g}-out`]).plan!.topics.properties, SourcePartitions: '1' };
        await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), topicsStatements(g, t)));
        await createTopicsAs(USERS.topics, created);
        await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), without(topicsStatements(g, t), index, action)));
        const answer = await resourceAs(USERS.topics, 'Update', { ...created, Tiers: ['2h'] }, created);
        if (answer['Status'] !== 'SUCCESS') throw new Error(String(answer['Reason']));
      },
    };
  }
  if (role === 'topics') {
    const g = uniqueName('acl-cr');
    const t = uniqueName('acl-cr-src');
    // Creating takes every action but AlterTopic, which only growing the declared source takes.
    const grows = action === 'kafka-cluster:AlterTopic';
    return {
      name: grows ? "the topics resource's Create growing the declared source" : "the topics resource's Create of the group's topics",
      run: async () => {
        if (grows) await ensureAs(broker.kafka(broker.admin), g, t, 1);
        await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), without(topicsStatements(g, t), index, action)));
        await createTopicsAs(USERS.topics, { ...planOf(g, t, [`${g}-out`]).plan!.topics.properties, SourcePartitions: grows ? '2' : '1' });
      },
    };
  }
  if (resources.includes(output)) {
    return role === 'retry'
      ? { name: "the retry function's ctx.send to its declared output", run: () => writeAs(broker.kafka(USERS.retry), output) }
      : { name: "the handler's ctx.send to its declared output", run: () => writeAs(broker.kafka(USERS.handler), output) };
  }
  if (resources.includes(`${group}.retry.*`)) {
    if (role === 'handler') return { name: "the hand-off's write to <group>.retry.1s", run: () => writeAs(broker.kafka(USERS.handler), retryTopic) };
    if (role === 'retry') return { name: "the retry function's hand-off write to <group>.retry.1s", run: () => writeAs(broker.kafka(USERS.retry), retryTopic) };
    return { name: "the re-drive's write to <group>.retry.1s", run: () => writeAs(broker.kafka(USERS.committer), retryTopic) };
  }
  if (role === 'handler') return { name: "the trigger's read of the source topic in group <group>", run: () => readAs(broker.kafka(USERS.handler, 'trigger'), group, topic, 1) };
  if (role === 'retry') return { name: "the retry tier's trigger's read of <group>.retry.1s in its group", run: () => readAs(broker.kafka(USERS.retry, 'retry-trigger'), retryTopic, retryTopic, 1) };
  // A refused committer run names its group, whatever was refused (never a topic skipped as deleted).
  if (!resources.includes(`${group}.lanes`) && action === 'kafka-cluster:DescribeGroup') {
    return { name: "the committer's read of what the triggers committed in <group>", run: () => commitAs(USERS.committer), names: `DescribeGroup on group ${group}` };
  }
  return { name: "the committer's commit to <group>.lanes", run: () => commitAs(USERS.committer), names: `${group}.lanes` };
}

describe('each granted action is needed: without it, a named operation is refused', () => {
  beforeAll(async () => {
    // One more record done and not committed: a committer run has a commit to make.
    const producer = broker.kafka(broker.admin).producer();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ key: 'd', value: '{}', partition: 0 }] });
    await producer.disconnect();
    const all = await readAs(broker.kafka(broker.admin), uniqueName('acl-check'), topic, 4);
    const handler = handlerAs(USERS.handler);
    try {
      expect(await handler(eventOf(all.slice(3)), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });
    } finally {
      await handler.close();
    }
  });

  it('has a case for every action but those Apache Kafka cannot prove, each still granted', () => {
    expect(provable.length).toBeGreaterThan(10);
    for (const { role, action } of notProvable) expect(statementsOf(role).some((s) => s.Action.includes(action))).toBe(true);
    expect([...new Set(notProvable.map((r) => short(r.action)))].sort()).toEqual(Object.keys(NOT_PROVABLE).sort());
    for (const { role, index, action } of grantedAgain) {
      // Another statement of the role grants the same action (Connect, read by every client of a role).
      expect(statementsOf(role).some((s, i) => i !== index && s.Action.includes(action))).toBe(true);
    }
    expect(grantsOf(grants.handler).length).toBeGreaterThan(0);
    expect(grantsOf(grants.retry).length).toBeGreaterThan(0);
  });

  it.each(provable.map((r) => ({ ...r, label: `${r.role} without ${r.action} (statement ${r.index}): ${operationFor(r).name}` })))('$label', async (removal) => {
    // Prepare
    const { role, index, action } = removal;
    // The operator's and the topics resource's statements name the topics of one command: their cases set their own
    // ACLs, for fresh names.
    if (role !== 'operator' && role !== 'topics') await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), without(statementsOf(role), index, action)));

    const mark = broker.authorizerMark();

    try {
      // Act
      const operation = operationFor(removal);
      const error = await operation.run().then(() => undefined, (e: unknown) => e);

      // Assess: the operation failed because Kafka refused it: kafkajs reports Kafka's `*_AUTHORIZATION_FAILED`, or
      // (where kafkajs hides it: a refused FindCoordinator becomes "Failed to find group coordinator", a refused
      // CreateTopics "Topic creation errors") the broker's authorizer logged a denial of this principal.
      const refusal = refusalOf(error);
      const denied = broker.deniedSince(mark).filter((line) => line.includes(`Principal = ${principal(role)} `));
      expect(error !== undefined && (refusal.endsWith('_AUTHORIZATION_FAILED') || denied.length > 0) ? 'refused' : `${refusal}; no denial logged`).toBe('refused');
      if (operation.names !== undefined) expect(error instanceof Error ? error.message : String(error)).toContain(operation.names);
    } finally {
      await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), statementsOf(role)));
    }
  });

  it('fails the committer run, naming the topics and the group, when Kafka refuses it DescribeTopic on them', async () => {
    // Prepare: the committer's read statement without DescribeTopic (so no READ either, as MSK IAM requires).
    const index = grants.committer.findIndex((s) => s.Action.includes('kafka-cluster:ReadData'));
    await setAcls(broker.kafka(broker.admin), principal('committer'), aclsFor(principal('committer'), without(grants.committer, index, 'kafka-cluster:DescribeTopic')));

    try {
      // Act
      const error = await commitAs(USERS.committer).then(() => undefined, (e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(OffsetFetchRefusedError);
      expect((error as OffsetFetchRefusedError).message).toMatch(new RegExp(`${group}\\.lanes.*${topic}|${topic}.*${group}\\.lanes`));
      // The retry topic stays describable: the re-drive's write statement grants DescribeTopic on `<group>.retry.*`.
      expect((error as OffsetFetchRefusedError).topics).toEqual([topic]);
      expect(refusalOf(error)).toBe('TOPIC_AUTHORIZATION_FAILED');
    } finally {
      await setAcls(broker.kafka(broker.admin), principal('committer'), aclsFor(principal('committer'), grants.committer));
    }
  });

  it("refuses a recovery's read without the committer's grant on `<group>.lanes.recover.*`", async () => {
    // Prepare: the committer's statements without the recoveries' group prefix
    const prefix = mskArns(ARN).group(`${group}.lanes.recover.*`);
    const narrowed = grants.committer.map((statement) =>
      Array.isArray(statement.Resource) && statement.Resource.includes(prefix) ? { ...statement, Resource: statement.Resource.filter((resource) => resource !== prefix) } : statement,
    );
    expect(narrowed).not.toEqual(grants.committer);
    await setAcls(broker.kafka(broker.admin), principal('committer'), aclsFor(principal('committer'), narrowed));
    const mark = broker.authorizerMark();

    try {
      // Act
      const error = await readRange(broker.kafka(USERS.committer, 'recovery'), group, { topic, partition: 0, from: 0, end: 1 }).then(() => undefined, (e: unknown) => e);

      // Assess
      const denied = broker.deniedSince(mark).filter((line) => line.includes(`Principal = ${principal('committer')} `) && line.includes(`${group}.lanes.recover.`));
      expect(error !== undefined && (refusalOf(error).endsWith('_AUTHORIZATION_FAILED') || denied.length > 0) ? 'refused' : `${refusalOf(error)}; no denial logged`).toBe('refused');
    } finally {
      await setAcls(broker.kafka(broker.admin), principal('committer'), aclsFor(principal('committer'), grants.committer));
    }
  });

  it('with every grant of the deploy guide, topics ensure grows a source topic', async () => {
    // Prepare: a source topic of one partition, and the operator's grants on it.
    const g = uniqueName('acl-op');
    const t = uniqueName('acl-op-src');
    await ensureAs(broker.kafka(broker.admin), g, t, 1);
    await setAcls(broker.kafka(broker.admin), principal('operator'), aclsFor(principal('operator'), operatorStatements(g, t)));

    try {
      // Act
      await ensureAs(broker.kafka(USERS.operator), g, t, 2);

      // Assess
      const metadata = await withAdmin(broker.kafka(broker.admin), (admin) => admin.fetchTopicMetadata({ topics: [t] }));
      expect(metadata.topics[0]?.partitions).toHaveLength(2);
    } finally {
      await setAcls(broker.kafka(broker.admin), principal('operator'), aclsFor(principal('operator'), statementsOf('operator')));
    }
  });

  it('with every grant back, the committer commits what the refused runs could not', async () => {
    const run = await commitAs(USERS.committer);

    expect(run.moves.map((m) => [m.topic, m.to])).toEqual([[topic, 4]]);
    expect(await committedOf(`${group}.lanes`, [topic])).toEqual({ [`${topic}-0`]: '4' });
  });
});
