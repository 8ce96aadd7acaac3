/**
 * The hand-off writer: writes retry and dead-letter copies through one idempotent kafkajs producer, coalescing
 * concurrent writes into few sends, and settles each write only on the broker's acks=all acknowledgement (G3).
 * A copy the broker refuses for good becomes a dead letter without its value, so no record stalls its partition.
 */
import type { HandOffSink, HandOffItem, HandOffOutcome } from '../ports/handoff';
import type { Message, PartitionerArgs, ProducerConfig, TopicMessages } from 'kafkajs';
import { deadlineCall, withinDeadline } from '../deadline';
import { HandOffError } from './errors';
import { handOffMessage } from './headers';
import { causeMessage, deadLetterWithout, messageBytes, refusalOf, type Refusal, type Stub } from './refusals';
import { SendTimeoutError, copyPartitioner, describeTopics, topicsOf, type Caller, type Connection, type Entry } from './writer-parts';
import { producerRetry, validate, type HandOffWriterOptions, type HandOffWriterStats, type ProducerFactory, type WriteOptions } from './writer-options';

export { HAND_OFF_WRITER_DEFAULTS, producerRetry, type HandOffWriterOptions, type HandOffWriterStats, type ProducerFactory, type WriteOptions } from './writer-options';

/**
 * Writes retry and dead-letter copies (see `handOffMessage`) through one kafkajs producer: idempotent, acks=all.
 *
 * `write` resolves only once every item is written (acknowledged with acks=all, the condition for setting its done
 * bit: G3) or refused for good and replaced by an acknowledged dead letter without its value (so terminal), and
 * rejects with a `HandOffError` naming the target topics otherwise, at most `timeoutMs` after the call. Concurrent writes coalesce: while one send is in flight, later messages queue and go
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
 * const kafka = new Kafka({ clientId: 'orders', brokers });
 * const writer = new HandOffWriter(kafka, { deadLetterTopic: 'orders.dlq', timeoutMs: 8_000 });
 * const [outcome] = await writer.write([{ record, origin: originOf(record), kind: 'retry', topic: 'orders.retry.5s',
 *   attempt: 2, dueAtMs: Date.now() + 5_000, firstFailureAtMs: Date.now(), error: { name: err.name, message: err.message } }]);
 * // now, and only now, the record's done bit may be set; outcome.status 'refused': it is a dead letter, not a retry
 */
export class HandOffWriter implements HandOffSink {
  readonly #kafka: ProducerFactory;
  readonly #options: Required<HandOffWriterOptions>;
  // Messages waiting for the next send, in call order.
  #queue: Entry[] = [];
  #sending = false;
  #scheduled = false;
  #connection: Connection | undefined;
  #idleWaiters: Array<() => void> = [];
  #stats = { sends: 0, failedSends: 0, messages: 0, refused: 0 };
  // Keyless copies get their partition from a slot fixed when they are queued, not from kafkajs' round-robin
  // counter, so that a send kafkajs retries puts each message in the same partition as before (see `#partitioner`).
  readonly #keylessSlots = new WeakMap<Message, number>();
  #nextKeylessSlot = Math.floor(Math.random() * 0x7fffffff);

  /**
   * @throws ConfigError if an option is unknown or not what it should be.
   */
  constructor(kafka: ProducerFactory, options: HandOffWriterOptions) {
    this.#kafka = kafka;
    this.#options = validate(options);
  }

  /** Counters since the writer was created: sends, failed sends, acknowledged messages, refused copies. */
  get stats(): HandOffWriterStats {
    return { ...this.#stats };
  }

  /** Messages queued for the next send (not counting the send in flight). */
  get pendingCount(): number {
    return this.#queue.length;
  }

  /**
   * Hands records off: resolves, once every item has its outcome, to one `HandOffOutcome` per item, in order.
   * An item is `written` once the broker acknowledged its copy (acks=all). It is `refused` when the broker refused
   * the copy for good (too large, invalid, not authorized: sending it again could never work) and then
   * acknowledged a dead-letter copy of it without its value, written to `deadLetterTopic` (if even that is
   * refused, one without key and headers either): either way the record may be marked done.
   *
   * Kafka fails all records of one partition in one produce request together, and kafkajs reports only the
   * first failing partition; so after a refusal every copy of that send is sent again alone, and one oversized
   * copy fails only itself, never the hand-offs that shared its send (copies of the failed send that did land
   * are written twice: the retry path's dedupe by (origin, attempt) absorbs that).
   *
   * @throws RangeError (as a rejection, before anything is queued) if an item is malformed: a programming error.
   * @throws HandOffError (as a rejection) if a copy was not acknowledged within `timeoutMs`, a send failed for a
   * reason that may pass (a broker down, a missing topic), the dead-letter topic refused even a bare dead letter,
   * or `signal` aborted.
   * @example
   * try {
   *   const outcomes = await writer.write(items);
   *   outcomes.forEach((outcome, i) => {
   *     if (outcome.status === 'refused') logger.error('dead-lettered without value', { origin: items[i].origin, ...outcome });
   *   });
   *   markDone(items); // handed off or terminal, either way
   * } catch (error) {
   *   if (error instanceof HandOffError) reportNotProcessed(items); // the ESM redelivers them
   *   else throw error;
   * }
   */
  write(items: readonly HandOffItem[], options: WriteOptions = {}): Promise<HandOffOutcome[]> {
    // Arrays of their final length: most writes hand off one copy, and `[]` grown by one takes room for 17.
    const messages = new Array<Message>(items.length);
    try {
      for (let index = 0; index < items.length; index += 1) messages[index] = handOffMessage(items[index]!);
    } catch (error) {
      return Promise.reject(error);
    }
    if (messages.length === 0) return Promise.resolve([]);
    const { signal } = options;
    if (signal?.aborted === true) {
      const topics = topicsOf(items);
      return Promise.reject(new HandOffError(`Hand-off to ${describeTopics(topics)} aborted before it started`, { topics, cause: signal.reason }));
    }
    // One deadline for the call: its own timeout or the caller's signal, whichever comes first, settling the call's one
    // promise (`deadlineCall`). Not a signal per call: every hand-off of an invocation is bounded by one signal, and a
    // signal derived from it per call (`AbortSignal.any`) makes Node walk all of that signal's derived signals each time
    // one is collected, a cost that grows with the hand-offs of the invocation (about 25 µs per record at 10,000).
    return new Promise<HandOffOutcome[]>((resolve, reject) => {
      const caller: Caller = {
        outstanding: messages.length,
        settled: false,
        outcomes: new Array<HandOffOutcome>(messages.length),
        call: deadlineCall({ timeoutMs: this.#options.timeoutMs, signal }, { resolve, reject, reason: (timedOut) => this.#gaveUp(caller, items, timedOut, signal) }),
      };
      for (let index = 0; index < messages.length; index += 1) {
        const item = items[index]!;
        this.#queue.push(this.#entry(caller, index, item, item.topic, messages[index]!, false, undefined));
      }
      this.#schedule();
    });
  }

  /** A call given up at its deadline (`timedOut`) or its signal: its copies still queued are dropped. */
  #gaveUp(caller: Caller, items: readonly HandOffItem[], timedOut: boolean, signal: AbortSignal | undefined): HandOffError {
    const topics = topicsOf(items);
    const { timeoutMs } = this.#options;
    const error = timedOut
      ? new HandOffError(`Hand-off of ${items.length} record(s) to ${describeTopics(topics)} not acknowledged within ${timeoutMs} ms`, {
          topics,
          cause: new SendTimeoutError(timeoutMs),
        })
      : new HandOffError(`Hand-off to ${describeTopics(topics)} aborted`, { topics, cause: signal?.reason });
    this.#fail(caller, error);
    return error;
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

  /**
   * The next send's messages: queue order, up to `maxBatchBytes` (at least one), skipping settled callers; an
   * entry to be sent alone goes alone.
   */
  #take(): Entry[] {
    const batch: Entry[] = [];
    let bytes = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Entry;
      if (next.caller.settled) {
        this.#queue.shift();
        continue;
      }
      if (batch.length > 0 && (next.alone || bytes + next.bytes > this.#options.maxBatchBytes)) break;
      this.#queue.shift();
      batch.push(next);
      bytes += next.bytes;
      if (next.alone) break;
    }
    return batch;
  }

  /** A queue entry; a keyless copy gets its partition slot here, once (see `#partitioner`). */
  #entry(caller: Caller, index: number, item: HandOffItem, topic: string, message: Message, alone: boolean, stub: Entry['stub']): Entry {
    if (message.key === null || message.key === undefined) {
      this.#keylessSlots.set(message, this.#nextKeylessSlot);
      this.#nextKeylessSlot = (this.#nextKeylessSlot + 1) & 0x7fffffff;
    }
    return { caller, index, item, topic, message, bytes: messageBytes(message), alone, stub };
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
      const refusal = refusalOf(cause);
      if (refusal === undefined) this.#failBatch(batch, cause);
      else this.#refused(batch, refusal);
      return;
    }
    this.#stats.messages += batch.length;
    for (const entry of batch) {
      const { caller, index, stub } = entry;
      if (caller.settled) continue;
      if (stub === undefined) {
        caller.outcomes[index] = WRITTEN;
      } else {
        this.#stats.refused += 1;
        caller.outcomes[index] = { status: 'refused', reason: stub.refusal.reason, error: stub.refusal.error };
      }
      caller.outstanding -= 1;
      if (caller.outstanding === 0) {
        caller.settled = true;
        caller.call.answered(caller.outcomes);
      }
    }
  }

  /**
   * A send the broker refused for good. With several copies, which one it refused is unknown (kafkajs reports
   * the first failing partition, and the broker fails a partition's whole batch): each goes again, alone, at
   * the head of the queue. A copy refused alone is replaced by a dead letter without its value; a dead letter
   * without value refused in turn, by one without key and headers either; a refused bare one fails its write.
   */
  #refused(batch: readonly Entry[], refusal: Refusal): void {
    const live = batch.filter((entry) => !entry.caller.settled);
    if (batch.length > 1) {
      this.#queue.unshift(...live.map((entry) => ({ ...entry, alone: true })));
      return;
    }
    const [entry] = live;
    if (entry === undefined) return;
    if (entry.stub?.carries === 'bare') {
      this.#fail(
        entry.caller,
        new HandOffError(
          `The dead-letter topic \`${entry.topic}\` refused even a dead letter without value, key and headers ` +
            `(${refusal.error.name}: ${refusal.error.message}) for a record whose copy to \`${entry.item.topic}\` was ` +
            `refused (${entry.stub.refusal.reason})`,
          { topics: [entry.topic], cause: refusal.error },
        ),
      );
      return;
    }
    const carries: Stub = entry.stub === undefined ? 'no-value' : 'bare';
    const stub = { refusal: entry.stub?.refusal ?? refusal, carries };
    const topic = this.#options.deadLetterTopic;
    const message = deadLetterWithout(entry.item, topic, stub.refusal, carries);
    this.#queue.unshift(this.#entry(entry.caller, entry.index, entry.item, topic, message, true, stub));
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
    this.#queue = this.#queue.filter((entry) => entry.caller !== caller);
    // A no-op when the call was given up (its deadline came): it settled already.
    caller.call.failed(error);
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
    const { timeoutMs } = this.#options;
    return withinDeadline(work, timeoutMs, undefined, () => new SendTimeoutError(timeoutMs));
  }

  readonly #partitioner = (): ((args: PartitionerArgs) => number) => copyPartitioner((message) => this.#keylessSlots.get(message) ?? 0);
}

/** The outcome of every copy written: one object, not one per copy. */
const WRITTEN: HandOffOutcome = Object.freeze({ status: 'written' });

