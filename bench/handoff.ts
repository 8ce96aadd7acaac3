/**
 * bench:handoff — the hand-off writer's CPU per retry copy, without a broker: what bench:steps' `1 hand-off,
 * unordered` row measures through Kafka, less the network and the engine, so its figures hold still enough to compare
 * two checkouts. Each copy is built as the source path builds one after a failure (`copies.afterFailure`) and handed
 * to `HandOffWriter.write` alone, PER_TURN writes per turn of the event loop, under one signal (as an invocation's
 * failures arrive). The producer under the writer does what kafkajs does with a send: its partitioner and its
 * grouping per partition (`groupMessagesPerPartition`), then encodes the produce request (kafkajs's own request
 * encoder, its record batches and CRC), and acknowledges on the next turn. kafkajs's internal modules are read from
 * node_modules (kafkajs 2.2.4, pinned in package-lock.json).
 *
 * Rows: `encoded` (all of the above) and `not encoded` (the writer, the copies, partitioning and grouping, but no
 * request encoding: the framework's part). ROUNDS rounds run every row once each, interleaved; a cell is the median.
 *
 *   npm run bench:handoff
 *   BASE=/work/base BENCH=handoff npm run bench:interleave   # beside another checkout, one process per run
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Message, PartitionerArgs, ProducerConfig } from 'kafkajs';
import { HandOffWriter } from '../src/handoff';
import { copiesFor } from '../src/handoff/copies';
import type { KafkaRecord } from '../src/event';
import { resolveOptions } from '../src/options';
import { median, startClock } from './support';

const COPIES = Number(process.env.COPIES ?? 200_000);
const PER_TURN = Number(process.env.PER_TURN ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const FIGURES_JSON = process.env.FIGURES_JSON;

type Grouped = Record<string, Message[]>;
interface Encodable {
  encode(): Promise<{ buffer: Buffer }>;
}
const kafkajsModule = createRequire(require.resolve('kafkajs'));
const groupMessagesPerPartition = kafkajsModule('./src/producer/groupMessagesPerPartition') as (args: PartitionerArgs & { messages: Message[]; partitioner: (args: PartitionerArgs) => number }) => Grouped;
const produceRequest = kafkajsModule('./src/protocol/requests/produce/v3/request') as (request: object) => Encodable;
const Long = kafkajsModule('./src/utils/long') as { fromInt(value: number): unknown };

const partitionMetadata = [0, 1].map((partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));

/** A producer that partitions, groups and (when `encode`) encodes each send as kafkajs does, and acknowledges it a turn later. */
class EncodingProducer {
  readonly #partitioner: (args: PartitionerArgs) => number;
  readonly #encode: boolean;
  constructor(config: ProducerConfig, encode: boolean) {
    this.#partitioner = config.createPartitioner!();
    this.#encode = encode;
  }
  connect = (): Promise<void> => Promise.resolve();
  disconnect = (): Promise<void> => Promise.resolve();
  async sendBatch({ topicMessages }: { topicMessages: Array<{ topic: string; messages: Message[] }> }): Promise<unknown[]> {
    for (const { topic, messages } of topicMessages) {
      const grouped = groupMessagesPerPartition({ topic, partitionMetadata, messages, partitioner: this.#partitioner } as never);
      if (!this.#encode) continue;
      const partitions = Object.keys(grouped).map((partition) => ({ partition: Number(partition), messages: grouped[partition]!, firstSequence: 0 }));
      await produceRequest({ acks: -1, timeout: 10_000, topicData: [{ topic, partitions }], producerId: Long.fromInt(1), producerEpoch: 0 }).encode();
    }
    await new Promise((resolve) => setImmediate(resolve));
    return [];
  }
}

const options = resolveOptions({ group: 'bench-handoff', concurrency: 200, ordering: 'unordered' }, {});
const copies = copiesFor(options, Date.now);
const error = { name: 'Error', message: 'fails its first run: handed off to the retry topic' };
const at = Date.now();
const records: KafkaRecord[] = Array.from({ length: 1_000 }, (_, i) => ({
  topic: 'bench-handoff-src', partition: 0, offset: 100_000 + i, timestamp: at, timestampType: 'CREATE_TIME',
  key: Buffer.from(`k${i}`), value: Buffer.from(`{"n":${i}}`), headers: [], raw: {} as KafkaRecord['raw'],
}));

/** Hands off `count` copies, PER_TURN writes per turn, one copy each; CPU µs per copy. */
async function handOff(writer: HandOffWriter, count: number): Promise<number> {
  const signal = new AbortController().signal;
  const clock = startClock();
  for (let first = 0; first < count; first += PER_TURN) {
    const writes: Array<Promise<unknown>> = [];
    for (let i = first; i < Math.min(count, first + PER_TURN); i += 1) {
      const record = records[i % records.length]!;
      const item = copies.afterFailure({ record, origin: { topic: record.topic, partition: 0, offset: record.offset } }, { attempt: 1, firstFailureAtMs: at, error });
      writes.push(writer.write([item], { signal }));
    }
    await Promise.all(writes);
  }
  return clock.stop().cpuMicros / count;
}

async function main(): Promise<void> {
  const rows = { encoded: true, 'not encoded': false };
  const writers = Object.entries(rows).map(([label, encode]) => ({
    label,
    writer: new HandOffWriter({ producer: (config?: ProducerConfig) => new EncodingProducer(config ?? {}, encode) as never }, { deadLetterTopic: 'bench-handoff.dlq' }),
    cpu: [] as number[],
  }));
  for (const row of writers) await handOff(row.writer, 20_000);
  for (let round = 0; round < ROUNDS; round += 1) for (const row of writers) row.cpu.push(await handOff(row.writer, COPIES));
  console.log(`bench:handoff: ${COPIES.toLocaleString('en-US')} retry copies, ${PER_TURN} writes per turn, median of ${ROUNDS} round(s), node ${process.version}`);
  const figures: Record<string, { cpuPerRecord: number }> = {};
  for (const { label, cpu } of writers) {
    figures[label] = { cpuPerRecord: median(cpu) };
    console.log(`  ${label.padEnd(12)} ${median(cpu).toFixed(2).padStart(6)} CPU µs per copy (rounds: ${cpu.map((c) => c.toFixed(2)).join(', ')})`);
  }
  if (FIGURES_JSON !== undefined) writeFileSync(FIGURES_JSON, JSON.stringify(figures));
}

void main();
