/**
 * Produces the outputs of `ctx.send` through one idempotent kafkajs producer, acks=all, coalescing the outputs of
 * records that finish in the same tick into one send. A send settles only on the broker's acknowledgement: the
 * records whose outputs it carries are done only then (G3 extended to outputs); a failed send fails only the records
 * with an output to a topic that was not acknowledged.
 */
import type { Message, PartitionerArgs, TopicMessages } from 'kafkajs';
import type { KafkaProducer } from '../connections/kafka-client';
import type { OutputMessage, OutputSink } from '../ports/handoff';
import { HandOffError } from './errors';
import { messageOf } from '../describe';
import { producerRetry, type ProducerFactory } from './writer';
import { copyPartitioner } from './writer-parts';

interface Pending {
  /** One list per record. */
  readonly records: ReadonlyArray<readonly OutputMessage[]>;
  readonly resolve: (outcomes: ReadonlyArray<Error | undefined>) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * @example
 * const writer = new OutputWriter(new Kafka({ brokers }), 8_000);
 * await writer.send([[{ topic: 'receipts', key: 'o-1', value: '{"ok":true}', headers: {} }]]); // [undefined]
 */
export class OutputWriter implements OutputSink {
  readonly #kafka: ProducerFactory;
  readonly #timeoutMs: number;
  #producer: { producer: KafkaProducer; connected: Promise<void> } | undefined;
  #queue: Pending[] = [];
  /**
   * A keyless output's partition slot, given at its first partitioning and kept when kafkajs partitions a retried
   * send again (kafkajs' own round-robin would move it, and its sequence numbers with it); keyed outputs go where
   * the Java client and kafkajs put their key (murmur2), computed without kafkajs' 64-bit arithmetic.
   */
  readonly #keylessSlots = new WeakMap<Message, number>();
  #nextKeylessSlot = 0;
  #scheduled = false;
  /** Sends run one at a time, in call order; outputs queued meanwhile go together in the next. */
  #chain: Promise<void> = Promise.resolve();
  /** Sends so far (one `sendBatch` each), for the benchmark's figures. */
  sends = 0;

  constructor(kafka: ProducerFactory, timeoutMs = 10_000) {
    this.#kafka = kafka;
    this.#timeoutMs = timeoutMs;
  }

  send(records: ReadonlyArray<readonly OutputMessage[]>, options: { signal?: AbortSignal } = {}): Promise<ReadonlyArray<Error | undefined>> {
    if (records.length === 0) return Promise.resolve([]);
    const { signal } = options;
    if (signal?.aborted === true) return Promise.reject(new HandOffError('outputs not sent: aborted before the send', { topics: topicsOf(records), cause: signal.reason }));
    return new Promise<ReadonlyArray<Error | undefined>>((resolve, reject) => {
      const onAbort = (): void => reject(new HandOffError('outputs not acknowledged in time: aborted', { topics: topicsOf(records), cause: signal?.reason }));
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      this.#queue.push({
        records,
        resolve: (outcomes) => { done(); resolve(outcomes); },
        reject: (error) => { done(); reject(error); },
      });
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#chain = this.#chain.then(() => this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    this.#scheduled = false;
    const batch = this.#queue.splice(0);
    if (batch.length === 0) return;
    const byTopic = new Map<string, Message[]>();
    for (const { records } of batch) for (const outputs of records) for (const output of outputs) messagesOf(byTopic, output.topic).push(kafkaMessage(output));
    const error = await this.#sendBatch(byTopic);
    if (error === undefined) {
      for (const pending of batch) pending.resolve(pending.records.map(() => undefined));
      return;
    }
    // One topic: nothing tells its records apart, they all failed. Several: each topic again on its own (a fresh
    // producer), so a record is failed only by a topic of its own (a missing one fails before anything is written;
    // a topic written the first time gets copies with the same identity header, which dedupeOutputs drops).
    const failed = new Map<string, Error>();
    if (byTopic.size === 1) failed.set(byTopic.keys().next().value!, error);
    else {
      for (const [topic, messages] of byTopic) {
        const alone = await this.#sendBatch(new Map([[topic, messages]]));
        if (alone !== undefined) failed.set(topic, alone);
      }
    }
    for (const pending of batch) {
      pending.resolve(pending.records.map((outputs) => {
        for (const output of outputs) {
          const cause = failed.get(output.topic);
          if (cause !== undefined) return cause;
        }
        return undefined;
      }));
    }
  }

  /** One `sendBatch`: `undefined` once acknowledged, else the error naming the topics and the broker's answer. */
  async #sendBatch(byTopic: ReadonlyMap<string, Message[]>): Promise<HandOffError | undefined> {
    const topicMessages: TopicMessages[] = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
    const current = this.#current();
    this.sends += 1;
    try {
      await current.connected;
      await current.producer.sendBatch({ topicMessages, acks: -1, timeout: this.#timeoutMs });
      return undefined;
    } catch (cause) {
      // A new producer id for the next send: kafkajs rolls sequence numbers back after a failed send, and a
      // broker that did write it could take different messages with the same numbers for duplicates.
      if (this.#producer === current) this.#producer = undefined;
      current.producer.disconnect().catch(() => undefined);
      // Kafka's answer, found under kafkajs' retry wrapper (a missing topic: UNKNOWN_TOPIC_OR_PARTITION).
      return new HandOffError(`outputs to ${[...byTopic.keys()].join(', ')} not acknowledged: ${brokerAnswer(cause)}`, { topics: [...byTopic.keys()], cause });
    }
  }

  #current(): { producer: KafkaProducer; connected: Promise<void> } {
    if (this.#producer === undefined) {
      // kafkajs requires acks=-1 and at least one retry for an idempotent producer.
      const producer = this.#kafka.producer({
        idempotent: true, maxInFlightRequests: 1, retry: producerRetry(this.#timeoutMs), allowAutoTopicCreation: false, createPartitioner: this.#partitioner,
      });
      const connected = producer.connect();
      connected.catch(() => undefined);
      this.#producer = { producer, connected };
    }
    return this.#producer;
  }

  readonly #partitioner = (): ((args: PartitionerArgs) => number) => copyPartitioner((message) => this.#keylessSlot(message));

  #keylessSlot(message: Message): number {
    let slot = this.#keylessSlots.get(message);
    if (slot === undefined) {
      slot = this.#nextKeylessSlot;
      this.#nextKeylessSlot = (slot + 1) % 0x7fffffff;
      this.#keylessSlots.set(message, slot);
    }
    return slot;
  }

  async disconnect(): Promise<void> {
    const current = this.#producer;
    this.#producer = undefined;
    if (current !== undefined) await current.producer.disconnect();
  }
}

/** The broker's error (kafkajs' name and message) in a failed send, else the failure's own message. */
function brokerAnswer(cause: unknown): string {
  for (let error: unknown = cause, depth = 0; depth < 8 && typeof error === 'object' && error !== null; depth++) {
    const { type, message } = error as { type?: unknown; message?: unknown };
    if (typeof type === 'string') return `${type} (${String(message)})`;
    error = (error as { cause?: unknown; originalError?: unknown }).originalError ?? (error as { cause?: unknown }).cause;
  }
  return messageOf(cause);
}

function topicsOf(records: ReadonlyArray<readonly OutputMessage[]>): string[] {
  return [...new Set(records.flatMap((outputs) => outputs.map((output) => output.topic)))];
}

function messagesOf(byTopic: Map<string, Message[]>, topic: string): Message[] {
  let messages = byTopic.get(topic);
  if (messages === undefined) byTopic.set(topic, (messages = []));
  return messages;
}

function kafkaMessage(output: OutputMessage): Message {
  // kafkajs reads the headers only: the output's own object goes as it is.
  const message: Message = { key: output.key, value: output.value, headers: output.headers as Message['headers'] };
  if (output.partition !== undefined) message.partition = output.partition;
  return message;
}
