/**
 * The hand-off writer: writes retry and dead-letter copies through one idempotent kafkajs producer, coalescing
 * concurrent writes into few sends, and settles each write only on the broker's acks=all acknowledgement (G3).
 */
import {
  Partitioners,
  type Kafka,
  type Message,
  type PartitionerArgs,
  type Producer,
  type ProducerConfig,
  type RetryOptions,
  type TopicMessages,
} from 'kafkajs';
import { ConfigError, describeValue } from '../errors';
import { HandOffError } from './errors';
import { handOffMessage } from './headers';
import type { HandOffItem, HandOffOutcome } from './types';

export interface HandOffWriterOptions {
  /**
   * Longest a `write` may take, from the call until it settles, and longest one send (connect included) may take;
   * the processor must return before the Lambda deadline. Default 10,000.
   */
  readonly timeoutMs?: number;
  /**
   * Message bytes (key, value and headers, estimated) above which a send is cut and the rest waits for the next
   * one. A broker refuses a record batch above the topic's `max.message.bytes` (1 MiB by default) and kafkajs puts
   * all messages of one partition of one send in one batch. A single larger message still goes, alone.
   * Default 524,288.
   */
  readonly maxBatchBytes?: number;
  /**
   * Let the broker create a missing target topic with its defaults. Off by default: retry topics need a retention
   * longer than their delay, which `topics ensure` sets; a missing topic is a failed hand-off, not a surprise topic.
   */
  readonly allowAutoTopicCreation?: boolean;
}

export const HAND_OFF_WRITER_DEFAULTS = {
  timeoutMs: 10_000,
  maxBatchBytes: 512 * 1024,
  allowAutoTopicCreation: false,
} as const;

/** Counters of a writer since it was created. */
export interface HandOffWriterStats {
  /** Sends started: one `producer.sendBatch` each (or a connect that failed before it). */
  readonly sends: number;
  /** Sends that were not acknowledged. */
  readonly failedSends: number;
  /** Messages acknowledged by the broker. */
  readonly messages: number;
}

export interface WriteOptions {
  /** Aborting rejects the write with a `HandOffError` (what was already sent may still land). */
  readonly signal?: AbortSignal;
}

/** What the writer needs of a kafkajs client: a producer factory. */
export type ProducerFactory = Pick<Kafka, 'producer'>;

/**
 * The kafkajs retry policy of the writer's producer: backoff from 100 ms doubling up to 1 s, with as many retries
 * as fit in `timeoutMs` (at least one: kafkajs refuses an idempotent producer without). kafkajs defaults an
 * idempotent producer to unlimited retries, which would keep a send to an unreachable broker alive forever; the
 * writer stops waiting at `timeoutMs` anyway, and this makes the abandoned send stop on its own soon after.
 *
 * @example
 * producerRetry(10_000); // { initialRetryTime: 100, maxRetryTime: 1000, multiplier: 2, factor: 0.2, retries: 12 }
 */
export function producerRetry(timeoutMs: number): RetryOptions {
  const initialRetryTime = 100;
  const maxRetryTime = 1_000;
  const multiplier = 2;
  let retries = 0;
  let waited = 0;
  for (let wait = initialRetryTime; waited + wait <= timeoutMs; wait = Math.min(wait * multiplier, maxRetryTime)) {
    waited += wait;
    retries += 1;
  }
  return { initialRetryTime, maxRetryTime, multiplier, factor: 0.2, retries: Math.max(1, retries) };
}

function validate(options: HandOffWriterOptions): Required<HandOffWriterOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`Expected the hand-off writer options to be an object, got ${describeValue(options)}`);
  }
  const known = new Set(Object.keys(HAND_OFF_WRITER_DEFAULTS));
  const unknown = Object.keys(options).filter((key) => !known.has(key));
  if (unknown.length > 0) {
    throw new ConfigError(
      `Expected hand-off writer options among ${[...known].map((key) => `\`${key}\``).join(', ')}, got ${unknown
        .map((key) => `\`${key}\``)
        .join(', ')}`,
    );
  }
  const resolved = { ...HAND_OFF_WRITER_DEFAULTS, ...options };
  for (const key of ['timeoutMs', 'maxBatchBytes'] as const) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new ConfigError(`Expected \`${key}\` to be a positive integer, got ${describeValue(value)}`);
    }
  }
  if (typeof resolved.allowAutoTopicCreation !== 'boolean') {
    throw new ConfigError(
      `Expected \`allowAutoTopicCreation\` to be a boolean, got ${describeValue(resolved.allowAutoTopicCreation)}`,
    );
  }
  return resolved;
}

// Record overhead in a v2 record batch (length, attributes, deltas, varints) is a few bytes; a generous round
// figure keeps the estimate on the safe side for small records.
const RECORD_OVERHEAD_BYTES = 64;

function messageBytes(message: Message): number {
  let bytes = RECORD_OVERHEAD_BYTES;
  if (message.key !== null && message.key !== undefined) bytes += Buffer.byteLength(message.key);
  if (message.value !== null) bytes += Buffer.byteLength(message.value);
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      bytes += Buffer.byteLength(name) + Buffer.byteLength(one) + 4;
    }
  }
  return bytes;
}

/** One `write` call: settles when all its messages are acknowledged, or at its first failure. */
interface Caller {
  outstanding: number;
  settled: boolean;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly cleanup: () => void;
}

interface Entry {
  readonly caller: Caller;
  readonly topic: string;
  readonly message: Message;
  readonly bytes: number;
}

/** The current producer and its (lazy, shared) connect. */
interface Connection {
  readonly producer: Producer;
  connected: Promise<void> | undefined;
}

class SendTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`no acknowledgement within ${timeoutMs} ms`);
    this.name = new.target.name;
  }
}

function describeTopics(topics: readonly string[]): string {
  return topics.map((topic) => `\`${topic}\``).join(', ');
}

function causeMessage(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * Writes retry and dead-letter copies (see `handOffMessage`) through one kafkajs producer: idempotent, acks=all.
 *
 * `write` resolves only once the broker acknowledged every one of its messages with acks=all — the condition for
 * setting their done bits (G3) — and rejects with a `HandOffError` naming the target topics otherwise, at most
 * `timeoutMs` after the call. Concurrent writes coalesce: while one send is in flight, later messages queue and go
 * together in the next `sendBatch`; an idle writer sends at once (after the current microtask, so writes made in
 * one tick share a send). Sends run one at a time, in call order, so copies bound for one partition are written in
 * the order they were handed over.
 *
 * The producer connects on the first write (or `connect()`). After any failed send it is thrown away and the next
 * send uses a new one, with a new producer id: kafkajs rolls an idempotent producer's sequence numbers back when a
 * send fails, and a broker that had in fact written that send could take the next, different messages carrying the
 * same sequence numbers for duplicates and acknowledge them without writing them (or refuse every later send with
 * OUT_OF_ORDER_SEQUENCE_NUMBER).
 *
 * Connection attempts follow the `retry`, `connectionTimeout` and `requestTimeout` of the `Kafka` instance given;
 * keep them bounded too (the writer stops waiting at `timeoutMs` whatever they are, but an abandoned connect
 * keeps retrying in the background until they run out).
 *
 * @example
 * const writer = new HandOffWriter(new Kafka({ clientId: 'orders', brokers }), { timeoutMs: 8_000 });
 * await writer.write([{ record, origin: originOf(record), kind: 'retry', topic: 'orders.retry.5s', attempt: 2,
 *   dueAtMs: Date.now() + 5_000, firstFailureAtMs: Date.now(), error: { name: err.name, message: err.message } }]);
 * // now, and only now, the record's done bit may be set
 */
export class HandOffWriter {
  readonly #kafka: ProducerFactory;
  readonly #options: Required<HandOffWriterOptions>;
  // Messages waiting for the next send, in call order.
  #queue: Entry[] = [];
  #sending = false;
  #scheduled = false;
  #connection: Connection | undefined;
  #idleWaiters: Array<() => void> = [];
  #stats = { sends: 0, failedSends: 0, messages: 0 };
  // Keyless copies get their partition from a slot fixed when they are queued, not from kafkajs' round-robin
  // counter, so that a send kafkajs retries puts each message in the same partition as before (see `#partitioner`).
  readonly #keylessSlots = new WeakMap<Message, number>();
  #nextKeylessSlot = Math.floor(Math.random() * 0x7fffffff);

  /**
   * @throws ConfigError if an option is unknown or not what it should be.
   */
  constructor(kafka: ProducerFactory, options: HandOffWriterOptions = {}) {
    this.#kafka = kafka;
    this.#options = validate(options);
  }

  /** Counters since the writer was created: sends, failed sends, acknowledged messages. */
  get stats(): HandOffWriterStats {
    return { ...this.#stats };
  }

  /** Messages queued for the next send (not counting the send in flight). */
  get pendingCount(): number {
    return this.#queue.length;
  }

  /**
   * Hands records off: resolves once the broker acknowledged every copy (acks=all).
   *
   * @throws RangeError (as a rejection, before anything is queued) if an item is malformed: a programming error.
   * @throws HandOffError (as a rejection) if a copy was not acknowledged within `timeoutMs`, its send failed, or
   * `signal` aborted.
   * @example
   * try {
   *   await writer.write(items);
   *   markDone(items);
   * } catch (error) {
   *   if (error instanceof HandOffError) reportNotProcessed(items); // the ESM redelivers them
   *   else throw error;
   * }
   */
  write(items: readonly HandOffItem[], options: WriteOptions = {}): Promise<HandOffOutcome[]> {
    // Every item is written or the call rejects: an outcome per item, in order (the sink port's shape).
    return this.#writeAll(items, options).then(() => items.map((): HandOffOutcome => ({ status: 'written' })));
  }

  #writeAll(items: readonly HandOffItem[], options: WriteOptions): Promise<void> {
    let messages: Array<{ topic: string; message: Message }>;
    try {
      messages = items.map((item) => ({ topic: item.topic, message: handOffMessage(item) }));
    } catch (error) {
      return Promise.reject(error);
    }
    if (messages.length === 0) return Promise.resolve();
    const topics = [...new Set(messages.map(({ topic }) => topic))];
    const { signal } = options;
    if (signal?.aborted === true) {
      return Promise.reject(
        new HandOffError(`Hand-off to ${describeTopics(topics)} aborted before it started`, {
          topics,
          cause: signal.reason,
        }),
      );
    }

    return new Promise<void>((resolve, reject) => {
      const fail = (message: string, cause: unknown): void => {
        this.#fail(caller, new HandOffError(message, { topics, cause }));
      };
      const timer = setTimeout(
        () =>
          fail(
            `Hand-off of ${messages.length} record(s) to ${describeTopics(topics)} not acknowledged within ${this.#options.timeoutMs} ms`,
            new SendTimeoutError(this.#options.timeoutMs),
          ),
        this.#options.timeoutMs,
      );
      const onAbort = (): void => fail(`Hand-off to ${describeTopics(topics)} aborted`, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const caller: Caller = {
        outstanding: messages.length,
        settled: false,
        resolve,
        reject,
        cleanup: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      for (const { topic, message } of messages) {
        if (message.key === null || message.key === undefined) {
          this.#keylessSlots.set(message, this.#nextKeylessSlot);
          this.#nextKeylessSlot = (this.#nextKeylessSlot + 1) & 0x7fffffff;
        }
        this.#queue.push({ caller, topic, message, bytes: messageBytes(message) });
      }
      this.#schedule();
    });
  }

  /**
   * Connects the producer now rather than on the first write (e.g. at cold start, to take it off the first
   * record's latency).
   *
   * @throws HandOffError if it could not connect within `timeoutMs`.
   * @example
   * const writer = new HandOffWriter(kafka);
   * await writer.connect();
   */
  async connect(): Promise<void> {
    const connection = this.#current();
    const work = this.#connected(connection);
    try {
      await this.#withTimeout(work);
    } catch (cause) {
      this.#discard(connection, work);
      throw new HandOffError(`Could not connect the hand-off producer: ${causeMessage(cause)}`, { topics: [], cause });
    }
  }

  /**
   * Waits until every queued write has settled, then disconnects the producer. A later write connects again.
   *
   * @example
   * await writer.disconnect();
   */
  async disconnect(): Promise<void> {
    while (this.#sending || this.#queue.length > 0 || this.#scheduled) {
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
    }
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection !== undefined) await connection.producer.disconnect();
  }

  #schedule(): void {
    if (this.#sending || this.#scheduled || this.#queue.length === 0) return;
    this.#scheduled = true;
    // A microtask, not a timer: writes made in the same tick share the send, and an idle writer adds no latency.
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    if (this.#sending) return;
    const batch = this.#take();
    if (batch.length === 0) {
      for (const wake of this.#idleWaiters.splice(0)) wake();
      return;
    }
    this.#sending = true;
    void this.#send(batch).finally(() => {
      this.#sending = false;
      this.#pump();
    });
  }

  /** The next send's messages: queue order, up to `maxBatchBytes` (at least one), skipping settled callers. */
  #take(): Entry[] {
    const batch: Entry[] = [];
    let bytes = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Entry;
      if (next.caller.settled) {
        this.#queue.shift();
        continue;
      }
      if (batch.length > 0 && bytes + next.bytes > this.#options.maxBatchBytes) break;
      this.#queue.shift();
      batch.push(next);
      bytes += next.bytes;
    }
    return batch;
  }

  async #send(batch: Entry[]): Promise<void> {
    this.#stats.sends += 1;
    const byTopic = new Map<string, Message[]>();
    for (const { topic, message } of batch) {
      const messages = byTopic.get(topic);
      if (messages === undefined) byTopic.set(topic, [message]);
      else messages.push(message);
    }
    const topicMessages: TopicMessages[] = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
    const connection = this.#current();
    const work = (async () => {
      await this.#connected(connection);
      // acks -1: every in-sync replica has the messages (G3). `timeout` is how long the broker may wait for them.
      await connection.producer.sendBatch({ topicMessages, acks: -1, timeout: this.#options.timeoutMs });
    })();
    try {
      await this.#withTimeout(work);
    } catch (cause) {
      this.#stats.failedSends += 1;
      this.#discard(connection, work);
      this.#failBatch(batch, cause);
      return;
    }
    this.#stats.messages += batch.length;
    for (const { caller } of batch) {
      caller.outstanding -= 1;
      if (caller.outstanding === 0 && !caller.settled) {
        caller.settled = true;
        caller.cleanup();
        caller.resolve();
      }
    }
  }

  #failBatch(batch: readonly Entry[], cause: unknown): void {
    const perCaller = new Map<Caller, Set<string>>();
    for (const { caller, topic } of batch) {
      const topics = perCaller.get(caller);
      if (topics === undefined) perCaller.set(caller, new Set([topic]));
      else topics.add(topic);
    }
    for (const [caller, topicSet] of perCaller) {
      const topics = [...topicSet];
      const count = batch.filter((entry) => entry.caller === caller).length;
      this.#fail(
        caller,
        new HandOffError(
          `Could not hand off ${count} record(s) to ${describeTopics(topics)}: ${causeMessage(cause)}`,
          { topics, cause },
        ),
      );
    }
  }

  /** Rejects a caller once; its messages still queued are dropped (the caller will hand them off again). */
  #fail(caller: Caller, error: HandOffError): void {
    if (caller.settled) return;
    caller.settled = true;
    caller.cleanup();
    this.#queue = this.#queue.filter((entry) => entry.caller !== caller);
    caller.reject(error);
    if (!this.#sending && this.#queue.length === 0) this.#pump();
  }

  #current(): Connection {
    if (this.#connection === undefined) {
      const config: ProducerConfig = {
        // kafkajs requires acks=-1 and at least one retry for an idempotent producer. It serialises requests per
        // broker for the sequence numbers anyway; one request in flight per connection is KIP-98's original rule
        // and matches this writer, which never has two sends in flight.
        idempotent: true,
        maxInFlightRequests: 1,
        retry: producerRetry(this.#options.timeoutMs),
        allowAutoTopicCreation: this.#options.allowAutoTopicCreation,
        createPartitioner: this.#partitioner,
      };
      this.#connection = { producer: this.#kafka.producer(config), connected: undefined };
    }
    return this.#connection;
  }

  #connected(connection: Connection): Promise<void> {
    connection.connected ??= connection.producer.connect();
    return connection.connected;
  }

  /**
   * Drops a producer after a failure; the next send creates a new one (a new producer id). `work` is what it was
   * doing: abandoned at the timeout, it goes on until its own retries run out, and on a retry kafkajs reconnects a
   * disconnected client, so the producer is disconnected again once `work` settles, or its sockets would stay open
   * until the broker closes idle connections (10 minutes by default).
   */
  #discard(connection: Connection, work: Promise<unknown>): void {
    if (this.#connection === connection) this.#connection = undefined;
    const close = (): void => {
      connection.producer.disconnect().catch(() => {
        // Already broken; nothing to keep from it.
      });
    };
    close();
    work.then(close, close);
  }

  #withTimeout<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SendTimeoutError(this.#options.timeoutMs)), this.#options.timeoutMs);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }

  // Keyed copies: kafkajs' default partitioner (murmur2 of the key, as the Java client), so one key's copies go to
  // one partition. Keyless copies: their slot modulo the partition count, instead of kafkajs' per-call round-robin,
  // which would move a message to another partition when kafkajs retries a send whose first try the broker may
  // have written — and there the message now in its place would carry the same sequence numbers and be taken for
  // a duplicate.
  readonly #partitioner = (): ((args: PartitionerArgs) => number) => {
    const keyed = Partitioners.DefaultPartitioner();
    return (args) => {
      const { message, partitionMetadata } = args;
      if (message.key !== null && message.key !== undefined) return keyed(args);
      const slot = this.#keylessSlots.get(message) ?? 0;
      return partitionMetadata.length === 0 ? 0 : slot % partitionMetadata.length;
    };
  };
}
