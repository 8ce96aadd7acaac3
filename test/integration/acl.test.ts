/**
 * Least privilege, proven on a broker that enforces it. The IAM statements the serverless plugin generates for a
 * packaged function (src/serverless/iam.ts) are turned into Kafka ACLs with AWS's action-to-ACL mapping for MSK
 * IAM access control (support/msk-acls.ts), for one SCRAM user per role, on a second local broker with an
 * authorizer that allows nothing else (support/sasl-broker.ts). Then:
 * - under exactly those ACLs, `topics ensure` (as the operator the README describes), the trigger's reads, the
 *   processor's hand-off of a failing record, the retry function's run of the copy and its dead-letter write, and
 *   the committer's commits of the completion group all succeed;
 * - without any one granted action, a named operation is refused by Kafka, except the actions listed in
 *   `NOT_PROVABLE` (why each, beside it) and those another statement of the same role grants again.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { Redis } from 'ioredis';
import type { IHeaders, Kafka } from 'kafkajs';
import { lanes } from '../../src';
import { ensureTopics } from '../../src/admin';
import { CompletionStore } from '../../src/completion/store';
import { MemberlessOffsetCommitter, OffsetFetchRefusedError, runCommitter } from '../../src/committer';
import { encodeKafkaEvent, type KafkaRecordInput } from '../../src/event';
import { readHandOffHeaders } from '../../src/handoff';
import { groupGrants, mskArns, type Statement } from '../../src/serverless/iam';
import { planFunction } from '../../src/serverless/plan';
import { contextWithin } from './support/kafka-events';
import { aclsFor, grantsOf, isAuthorizationError, setAcls } from './support/msk-acls';
import { startSaslBroker, withAdmin, type SaslBroker, type ScramUser } from './support/sasl-broker';
import { REDIS_URL, uniqueName } from './support/stack';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

jest.setTimeout(180_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

type Role = 'handler' | 'committer' | 'operator';
const USERS: Readonly<Record<Role, ScramUser>> = {
  handler: { username: 'orders-handler', password: `h-${randomBytes(6).toString('hex')}` },
  committer: { username: 'orders-committer', password: `c-${randomBytes(6).toString('hex')}` },
  operator: { username: 'orders-operator', password: `o-${randomBytes(6).toString('hex')}` },
};
const principal = (role: Role): string => `User:${USERS[role].username}`;

/**
 * Granted, yet no operation of Apache Kafka can be shown to need it (each stays in the generated plan, asserted
 * below; the README's IAM section says why).
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

// The plan `serverless package` makes for a function with an MSK trigger (MSK IAM for the producers and the committer).
const { plan, problems } = planFunction(
  { service: 'shop', stage: 'dev' },
  'orders',
  { handler: 'functions/orders.handler', events: [{ msk: { arn: ARN, topic } }] },
  { group, retryTiers: [TIER] },
);
const grants = groupGrants(plan!, false);

/**
 * What the README's deploy section says the operator running `topics ensure` may do, on the topics of the
 * command: the source topic and the group's `<group>.` topics.
 */
function operatorStatements(forGroup: string, source: string): Statement[] {
  const readme = readFileSync(join(__dirname, '../../README.md'), 'utf8');
  const listed = /whose role may create topics \(([^)]*)\)/.exec(readme.replace(/\s+#?\s*/g, ' '))?.[1];
  if (listed === undefined) throw new Error('README: the deploy section no longer says what the operator may do');
  const actions = listed.split(',').map((action) => `kafka-cluster:${action.trim().replace(/^kafka-cluster:/, '')}`);
  return [
    { Effect: 'Allow', Action: actions.filter((a) => a === 'kafka-cluster:Connect'), Resource: arns.cluster },
    { Effect: 'Allow', Action: actions.filter((a) => a !== 'kafka-cluster:Connect'), Resource: [arns.topic(source), arns.topic(`${forGroup}.*`)] },
  ];
}

const statementsOf = (role: Role): Statement[] => (role === 'operator' ? operatorStatements(group, topic) : grants[role]);

let broker: SaslBroker;
let redis: Redis;

beforeAll(async () => {
  expect(problems).toEqual([]);
  broker = await startSaslBroker(Object.values(USERS));
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 3 });
  for (const role of ['handler', 'committer', 'operator'] as const) await setAcls(broker.kafka(broker.admin), principal(role), aclsFor(principal(role), statementsOf(role)));
});

afterAll(async () => {
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
function handlerAs(user: ScramUser) {
  return lanes(
    {
      group,
      flushIntervalMs: 20,
      retry: { tiers: [TIER], maxAttempts: 2, backoff: { type: 'fixed', delayMs: 100 } },
      redis: { url: REDIS_URL },
      kafka: { brokers: broker.brokers, sasl: { mechanism: 'scram-sha-512', username: user.username, password: user.password } },
    },
    async (record) => {
      if (String(record.key) === 'bad') throw new Error('refused by the test');
    },
  );
}

/** One committer run as the committer's user, as the deployed committer does it (a member-less commit). */
async function commitAs(user: ScramUser) {
  const kafka = broker.kafka(user, 'committer');
  return runCommitter({ store: new CompletionStore(redis), group, committer: new MemberlessOffsetCommitter(kafka, group, { retries: 1 }) });
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
  it('runs topics ensure, the processor, the retry function and the committer under exactly the generated grants', async () => {
    // Act: the operator creates the topics.
    await ensureAs(broker.kafka(USERS.operator), group, topic, 1);
    await withAdmin(broker.kafka(broker.admin), async (admin) => {
      const producer = broker.kafka(broker.admin).producer();
      await producer.connect();
      await producer.send({ topic, acks: -1, messages: ['a', 'bad', 'c'].map((key) => ({ key, value: '{}' })) });
      await producer.disconnect();
      expect((await admin.listTopics()).sort()).toEqual(expect.arrayContaining([topic, retryTopic, dlq]));
    });

    // Act: the trigger reads the batch in group <group>; the processor runs it and hands `bad` off.
    const handler = handlerAs(USERS.handler);
    try {
      const batch = await readAs(broker.kafka(USERS.handler, 'trigger'), group, topic, 3);
      expect(await handler(eventOf(batch), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });

      // The retry trigger reads the copy in group <group>.retry.1s; the retry function runs it, and it fails again.
      const copies = await readAs(broker.kafka(USERS.handler, 'retry-trigger'), retryTopic, retryTopic, 1);
      expect(readHandOffHeaders(copies[0]!.headers ?? [])).toMatchObject({ originOffset: 1, attempt: 2 });
      expect(await handler(eventOf(copies), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });
    } finally {
      await handler.close();
    }

    // Assess: the dead letter is there, and the committer commits the source and the retry topic.
    const dead = await readAs(broker.kafka(broker.admin), uniqueName('acl-check'), dlq, 1);
    expect(readHandOffHeaders(dead[0]!.headers ?? [])).toMatchObject({ originOffset: 1, attempt: 2, reason: 'attempts-exhausted' });
    const run = await commitAs(USERS.committer);
    expect(run.moves.map((m) => [m.topic, m.to]).sort()).toEqual([[retryTopic, 1], [topic, 3]].sort());
    expect(await committedOf(`${group}.lanes`, [topic, retryTopic])).toEqual({ [`${topic}-0`]: '3', [`${retryTopic}-0`]: '1' });
    expect(await committedOf(group, [topic])).toEqual({ [`${topic}-0`]: '3' });
    // The committer's re-drive writes a copy to a retry tier.
    await writeAs(broker.kafka(USERS.committer), retryTopic);
  });
});
