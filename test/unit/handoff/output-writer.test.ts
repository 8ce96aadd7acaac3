import { Partitioners, type Message, type PartitionerArgs, type Producer, type ProducerBatch, type ProducerConfig } from 'kafkajs';
import { OutputWriter } from '../../../src/handoff/output-writer';
import type { ProducerFactory } from '../../../src/handoff';
import type { OutputMessage } from '../../../src/ports/handoff';

/** A producer that takes every send at once and keeps what it was given. */
class TakingKafka implements ProducerFactory {
  readonly configs: ProducerConfig[] = [];
  readonly batches: ProducerBatch[] = [];

  producer(config?: ProducerConfig): Producer {
    this.configs.push(config ?? {});
    const batches = this.batches;
    return {
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      sendBatch: (batch: ProducerBatch) => {
        batches.push(batch);
        return Promise.resolve([]);
      },
    } as unknown as Producer;
  }
}

const metadata = (count: number): PartitionerArgs['partitionMetadata'] =>
  Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] }));

const output = (key: string | null, partition?: number): OutputMessage => ({ topic: 'receipts', key, value: '{}', headers: {}, ...(partition === undefined ? {} : { partition }) });

describe("the output writer's partitioner", () => {
  async function sentAndPartitioner(outputs: OutputMessage[]): Promise<{ messages: Message[]; partitioner: (args: PartitionerArgs) => number }> {
    const kafka = new TakingKafka();
    const writer = new OutputWriter(kafka, 8_000);
    await writer.send(outputs.map((one) => [one]));
    const create = kafka.configs[0]?.createPartitioner;
    if (create === undefined) throw new Error('the output producer has no partitioner of its own');
    return { messages: kafka.batches.flatMap((batch) => batch.topicMessages ?? []).flatMap((topic) => topic.messages), partitioner: create() };
  }

  it("puts a keyed output where kafkajs' default (Java-compatible) partitioner does", async () => {
    // Prepare
    const { messages, partitioner } = await sentAndPartitioner(Array.from({ length: 50 }, (_, i) => output(`order-${i}`)));
    const reference = Partitioners.DefaultPartitioner();

    // Act / Assess
    for (const count of [1, 3, 12]) {
      for (const message of messages) {
        const args = { topic: 'receipts', partitionMetadata: metadata(count), message };
        expect([message.key, partitioner(args)]).toEqual([message.key, reference(args)]);
      }
    }
  });

  it('keeps the partition an output names, keyed or not', async () => {
    // Prepare
    const { messages, partitioner } = await sentAndPartitioner([output('order-1', 5), output(null, 2)]);

    // Act
    const partitions = messages.map((message) => partitioner({ topic: 'receipts', partitionMetadata: metadata(12), message }));

    // Assess
    expect(partitions).toEqual([5, 2]);
  });

  it('gives a keyless output the same partition every time it is asked (a retried send), and spreads keyless outputs', async () => {
    // Prepare
    const { messages, partitioner } = await sentAndPartitioner(Array.from({ length: 8 }, () => output(null)));

    // Act
    const first = messages.map((message) => partitioner({ topic: 'receipts', partitionMetadata: metadata(4), message }));
    const again = messages.map((message) => partitioner({ topic: 'receipts', partitionMetadata: metadata(4), message }));

    // Assess
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(4);
  });
});
