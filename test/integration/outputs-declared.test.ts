/**
 * `ctx.send` to an output topic that is missing, or not among the declared outputs (`kafkaLanes.outputs`, given to
 * the function as KAFKA_LANES_OUTPUTS): the record fails with an error naming the topic and the broker's answer, and
 * its dead letter says so. On the local broker, as under `serverless offline`.
 */
import type { Context } from 'aws-lambda';
import { lanes } from '../../src';
import { readHandOffHeaders } from '../../src/handoff';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { createKafka, createTopic, REDIS_URL, uniqueName } from './support/stack';

jest.setTimeout(90_000);
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

/** A group whose first failure is its last (one attempt): the failing record goes to the dead-letter topic at once. */
async function deadLetterOf(send: string, environment: Record<string, string> = {}): Promise<{ message: string | undefined; reason: string | undefined }> {
  const group = uniqueName('out-decl');
  const topic = uniqueName('out-decl-src');
  await Promise.all([createTopic(topic, 1), createTopic(`${group}.retry.5s`, 1), createTopic(`${group}.dlq`, 1)]);
  const saved = { ...process.env };
  Object.assign(process.env, environment);
  const handler = lanes({ group, redis: { url: REDIS_URL }, retry: { tiers: ['5s'], maxAttempts: 1 } }, async (_record, ctx) => {
    ctx.send(send, { key: 'k', value: { ok: true } });
  });
  try {
    await produce(topic, [{ key: 'k', value: '{}' }]);
    const records = await fetchRecords(topic, 1);
    expect(await handler(eventOf(records), contextWithin(60_000) as unknown as Context)).toEqual({ batchItemFailures: [] });
    const [dead] = await fetchRecords(`${group}.dlq`, 1);
    const headers = readHandOffHeaders(dead!.headers ?? []);
    return { message: headers.errorMessage, reason: headers.reason };
  } finally {
    process.env = saved;
    await handler.close();
  }
}

describe('ctx.send to a topic that cannot take the output', () => {
  it("dead-letters the record with the missing topic's name and the broker's answer", async () => {
    // Prepare
    const missing = uniqueName('out-missing');

    // Act
    const dead = await deadLetterOf(missing);

    // Assess
    expect(dead.reason).toBe('attempts-exhausted');
    expect(dead.message).toContain(`\`${missing}\``);
    expect(dead.message).toContain('UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('dead-letters the record naming an undeclared topic and the declared ones, without writing it', async () => {
    // Prepare: the topic exists, but is not declared
    const undeclared = uniqueName('out-undeclared');
    await createTopic(undeclared, 1);

    // Act
    const dead = await deadLetterOf(undeclared, { KAFKA_LANES_OUTPUTS: 'shipments,invoices' });

    // Assess
    expect(dead.message).toContain(`Expected ctx.send to a declared output topic (kafkaLanes.outputs: \`shipments\`, \`invoices\`), got \`${undeclared}\``);
  });

  it('dead-letters every send when the block declares no output, as the plugin writes it (also under serverless offline)', async () => {
    // Prepare: the topic exists; the plugin sets KAFKA_LANES_OUTPUTS to nothing when `kafkaLanes.outputs` is absent
    const stray = uniqueName('out-none');
    await createTopic(stray, 1);

    // Act
    const dead = await deadLetterOf(stray, { KAFKA_LANES_OUTPUTS: '' });

    // Assess: refused as MSK IAM refuses a write the role is not granted, naming the block key
    expect(dead.message).toContain(`Expected ctx.send to a declared output topic (kafkaLanes.outputs: none declared), got \`${stray}\``);
    const admin = createKafka().admin();
    await admin.connect();
    try {
      expect((await admin.fetchTopicOffsets(stray)).map((partition) => partition.high)).toEqual(['0']);
    } finally {
      await admin.disconnect();
    }
  });

  it('fails only the record whose output went to the missing topic: the others sent with it are done, their outputs written', async () => {
    // Prepare: three records finishing together, their outputs in one send; the second's topic is missing
    const group = uniqueName('out-part');
    const topic = uniqueName('out-part-src');
    const out = uniqueName('out-part-out');
    const missing = uniqueName('out-part-missing');
    await Promise.all([createTopic(topic, 1), createTopic(out, 1), createTopic(`${group}.retry.5s`, 1), createTopic(`${group}.dlq`, 1)]);
    const handler = lanes({ group, redis: { url: REDIS_URL }, retry: { tiers: ['5s'], maxAttempts: 1 } }, async (record, ctx) => {
      ctx.send(record.offset === 1 ? missing : out, { key: String(record.key), value: { offset: record.offset } });
    });
    try {
      await produce(topic, [{ key: 'a', value: '{}' }, { key: 'b', value: '{}' }, { key: 'c', value: '{}' }]);
      const records = await fetchRecords(topic, 3);

      // Act
      const response = await handler(eventOf(records), contextWithin(60_000) as unknown as Context);
      const written = await fetchRecords(out, 2);
      const [dead] = await fetchRecords(`${group}.dlq`, 1);

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(written.map((record) => String(record.key)).sort()).toEqual(['a', 'c']);
      expect(String(dead!.key)).toBe('b');
      expect(readHandOffHeaders(dead!.headers ?? []).errorMessage).toContain(`\`${missing}\``);
    } finally {
      await handler.close();
    }
  });
});
