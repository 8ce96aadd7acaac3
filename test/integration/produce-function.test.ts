/**
 * The produce function (`kafkaLanes.produce: true`, src/serverless/produce-handler.ts) on the local broker: it writes
 * what `serverless invoke --data` gives it to the source topic, then waits until the trigger's consumer group has
 * committed past each record. A kafkajs consumer in the group stands in for Lambda's event source mapping, which
 * commits after each successful invocation.
 */
import { produceHandler } from '../../src/serverless/produce-handler';
import { createKafka, createTopic, deleteTopics, KAFKA_BROKERS, uniqueName } from './support/stack';

jest.setTimeout(120_000);

const topics: string[] = [];
afterAll(async () => {
  await deleteTopics(topics);
});

describe('the produce function', () => {
  it('writes the records to the source topic and answers processed once the trigger committed past them', async () => {
    // Prepare: the source topic and a stand-in for the trigger, reading and committing in the group
    const group = uniqueName('produce-fn');
    const topic = uniqueName('produce-fn-src');
    topics.push(topic);
    await createTopic(topic, 2);
    const env = { KAFKA_LANES_GROUP: group, KAFKA_LANES_BROKERS: KAFKA_BROKERS.join(','), KAFKA_LANES_KAFKA_SSL: 'false', KAFKA_LANES_PRODUCE_TOPIC: topic };
    const seen: Array<{ key: string; value: unknown }> = [];
    const trigger = createKafka().consumer({ groupId: group, maxWaitTimeInMs: 100 });
    await trigger.connect();
    await trigger.subscribe({ topic, fromBeginning: true });
    await trigger.run({
      autoCommitThreshold: 1,
      eachMessage: async ({ message }) => {
        seen.push({ key: String(message.key), value: JSON.parse(String(message.value)) as unknown });
      },
    });

    // Act: as `serverless invoke --function ordersProduce --data '{"records":[...]}'` calls it
    const answer = await produceHandler(env)({
      records: [
        { key: 'c-1', value: { orderId: 'o-1', amount: 5 } },
        { key: 'c-2', value: { orderId: 'o-2', amount: 7 }, headers: { trace: 't-1' } },
      ],
    }).finally(() => trigger.disconnect());

    // Assess
    expect(answer).toMatchObject({ topic, processed: true });
    expect(answer.produced.map((record) => record.key)).toEqual(['c-1', 'c-2']);
    for (const record of answer.produced) expect(BigInt(answer.committed[String(record.partition)]!)).toBeGreaterThan(BigInt(record.offset));
    expect(seen.sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: 'c-1', value: { orderId: 'o-1', amount: 5 } },
      { key: 'c-2', value: { orderId: 'o-2', amount: 7 } },
    ]);
  });

  it('answers processed: false when nothing commits within the wait, and refuses a request without records', async () => {
    // Prepare: no trigger reads this group
    const topic = uniqueName('produce-fn-idle');
    topics.push(topic);
    await createTopic(topic, 1);
    const handler = produceHandler({ KAFKA_LANES_GROUP: uniqueName('produce-fn-idle'), KAFKA_LANES_BROKERS: KAFKA_BROKERS.join(','), KAFKA_LANES_KAFKA_SSL: 'false', KAFKA_LANES_PRODUCE_TOPIC: topic });

    // Act
    const answer = await handler({ records: [{ key: 'c-1', value: 'plain text' }], waitSeconds: 1 });

    // Assess
    expect(answer).toMatchObject({ processed: false, committed: { '0': '-1' }, produced: [{ partition: 0, offset: '0', key: 'c-1' }] });
    await expect(handler({ records: [] })).rejects.toThrow('Expected `{"records": [{"key": "...", "value": ...}]}` with at least one record, got {"records":[]}');
  });
});
