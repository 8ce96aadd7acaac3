import { getEventListeners } from 'node:events';
import { KafkaJSNonRetriableError, KafkaJSProtocolError, Partitioners, type Message, type PartitionerArgs, type Producer, type ProducerBatch, type ProducerConfig } from 'kafkajs';
import { ConfigError } from '../../../src/errors';
import { HandOffError, HandOffWriter, producerRetry, readHandOffHeaders, type HandOffWriterOptions, type ProducerFactory } from '../../../src/handoff';
import { header, kafkaRecord, retryItem } from './factories';

interface Deferred {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** A kafkajs producer stand-in: every `sendBatch` waits until the test settles it (or settles at once if `auto`). */
class FakeProducer {
  readonly batches: ProducerBatch[] = [];
  readonly pending: Deferred[] = [];
  connects = 0;
  disconnects = 0;
  connectError: Error | undefined;
  auto = false;
  /** With `auto`: the broker's answer to a send, an error to refuse it. */
  judge: ((batch: ProducerBatch) => Error | undefined) | undefined;

  async connect(): Promise<void> {
    this.connects += 1;
    await Promise.resolve();
    if (this.connectError !== undefined) throw this.connectError;
  }

  async disconnect(): Promise<void> {
    this.disconnects += 1;
  }

  sendBatch(batch: ProducerBatch): Promise<[]> {
    this.batches.push(batch);
    const refusal = this.judge?.(batch);
    if (this.auto) return refusal === undefined ? Promise.resolve([]) : Promise.reject(refusal);
    return new Promise((resolve, reject) => this.pending.push({ resolve: () => resolve([]), reject }));
  }

  /** Settles the oldest unsettled send. */
  ack(): void {
    this.pending.shift()?.resolve();
  }

  fail(error: Error): void {
    this.pending.shift()?.reject(error);
  }
}

class FakeKafka implements ProducerFactory {
  readonly producers: FakeProducer[] = [];
  readonly configs: ProducerConfig[] = [];
  auto = false;
  /** Every producer's broker: see `FakeProducer.judge`. */
  judge: ((batch: ProducerBatch) => Error | undefined) | undefined;
  /** Every batch sent, by any producer, in order. */
  get batches(): ProducerBatch[] {
    return this.producers.flatMap((producer) => producer.batches);
  }
  /** Adjusts each new producer; `index` counts from 0. */
  setup: ((producer: FakeProducer, index: number) => void) | undefined;

  producer(config?: ProducerConfig): Producer {
    const producer = new FakeProducer();
    producer.auto = this.auto;
    producer.judge = this.judge;
    this.setup?.(producer, this.producers.length);
    this.producers.push(producer);
    this.configs.push(config ?? {});
    return producer as unknown as Producer;
  }

  get last(): FakeProducer {
    const producer = this.producers[this.producers.length - 1];
    if (producer === undefined) throw new Error('no producer yet');
    return producer;
  }
}

/** Lets queued microtasks and promise chains run (the writer schedules sends on a microtask). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Tracks a promise's state without awaiting it. */
function track(promise: Promise<unknown>): { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } {
  const tracked: { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { state: 'pending' };
  promise.then(
    () => {
      tracked.state = 'resolved';
    },
    (error: unknown) => {
      tracked.state = 'rejected';
      tracked.error = error;
    },
  );
  return tracked;
}

/** Every writer of these tests: the group's dead-letter topic. */
const DLQ = { deadLetterTopic: 'grp.dlq' } as const;
const WRITTEN = [{ status: 'written' }];

const item = (offset: number, topic = 'grp.retry.5s') =>
  retryItem({ record: kafkaRecord({ offset }), origin: { topic: 'orders', partition: 3, offset }, topic });

const offsetsOf = (batch: ProducerBatch | undefined): string[] =>
  (batch?.topicMessages ?? []).flatMap(({ topic, messages }) =>
    messages.map((m) => `${topic}@${String(readHandOffHeaders(m.headers ?? {}).originOffset)}`),
  );

describe('HandOffWriter', () => {
  it('creates one idempotent acks=all producer with bounded retries, lazily, and sends with acks -1', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, { ...DLQ, timeoutMs: 5_000 });
    expect(kafka.producers).toHaveLength(0);

    // Act
    const written = track(writer.write([item(1), item(2, 'grp.dlq'), item(3)]));
    await settle();

    // Assess
    expect(kafka.configs).toHaveLength(1);
    expect(kafka.configs[0]).toMatchObject({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      retry: producerRetry(5_000),
    });
    expect(kafka.last.connects).toBe(1);
    const batch = kafka.last.batches[0];
    expect(batch).toMatchObject({ acks: -1, timeout: 5_000 });
    expect(batch?.topicMessages?.map(({ topic }) => topic)).toEqual(['grp.retry.5s', 'grp.dlq']);
    expect(offsetsOf(batch)).toEqual(['grp.retry.5s@1', 'grp.retry.5s@3', 'grp.dlq@2']);
    expect(written.state).toBe('pending');

    kafka.last.ack();
    await settle();
    expect(written.state).toBe('resolved');
    expect(writer.stats).toEqual({ sends: 1, failedSends: 0, messages: 3, refused: 0 });
  });

  it('puts writes made in one tick into one send', async () => {
    // Prepare
    const kafka = new FakeKafka();
    kafka.auto = true;
    const writer = new HandOffWriter(kafka, DLQ);

    // Act
    await Promise.all(Array.from({ length: 50 }, (_, i) => writer.write([item(i)])));

    // Assess
    expect(kafka.last.batches).toHaveLength(1);
    expect(writer.stats.sends).toBe(1);
  });

  it('queues writes while a send is in flight and sends them together next; each settles with its own send', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);
    const first = track(writer.write([item(1)]));
    await settle();

    // Act
    const second = track(writer.write([item(2)]));
    await settle();
    const third = track(writer.write([item(3), item(4)]));
    await settle();
    expect(writer.pendingCount).toBe(3);
    kafka.last.fail(new Error('NOT_ENOUGH_REPLICAS'));
    await settle();

    // Assess: the first send failed, so the producer was replaced; the queued writes went together on a new one.
    expect(first.state).toBe('rejected');
    expect(first.error).toBeInstanceOf(HandOffError);
    expect(kafka.producers).toHaveLength(2);
    expect(kafka.producers[0]?.disconnects).toBeGreaterThanOrEqual(1);
    expect(offsetsOf(kafka.last.batches[0])).toEqual(['grp.retry.5s@2', 'grp.retry.5s@3', 'grp.retry.5s@4']);
    expect(second.state).toBe('pending');
    kafka.last.ack();
    await settle();
    expect(second.state).toBe('resolved');
    expect(third.state).toBe('resolved');
    expect(writer.stats).toEqual({ sends: 2, failedSends: 1, messages: 3, refused: 0 });
  });

  it('rejects with a retriable HandOffError naming the target topics and keeping the cause', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);
    const cause = new Error('Connection error: ECONNREFUSED');
    const written = writer.write([item(1, 'grp.retry.5s'), item(2, 'grp.dlq')]);
    await settle();

    // Act
    kafka.last.fail(cause);

    // Assess
    await expect(written).rejects.toMatchObject({
      name: 'HandOffError',
      retriable: true,
      cause,
      topics: ['grp.retry.5s', 'grp.dlq'],
      message: 'Could not hand off 2 record(s) to `grp.retry.5s`, `grp.dlq`: Connection error: ECONNREFUSED',
    });
  });

  it('fails the send, and replaces the producer, when connecting fails', async () => {
    // Prepare
    const kafka = new FakeKafka();
    kafka.setup = (producer, index) => {
      if (index === 0) producer.connectError = new Error('ECONNREFUSED');
      else producer.auto = true;
    };
    const writer = new HandOffWriter(kafka, DLQ);

    // Act / Assess
    await expect(writer.write([item(1)])).rejects.toBeInstanceOf(HandOffError);
    expect(kafka.producers[0]?.batches).toHaveLength(0);
    await expect(writer.write([item(2)])).resolves.toEqual(WRITTEN);
    expect(kafka.producers).toHaveLength(2);
  });

  it('rejects a write not acknowledged within timeoutMs; the stuck send holds up no later write and is closed when it ends', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, { ...DLQ, timeoutMs: 100 });

    // Act
    const stuck = writer.write([item(1)]);

    // Assess
    await expect(stuck).rejects.toThrow('Hand-off of 1 record(s) to `grp.retry.5s` not acknowledged within 100 ms');
    await settle();
    kafka.producers.forEach((producer) => (producer.auto = true));
    const next = writer.write([item(2)]);
    // The next write goes through a new producer; a loaded machine may take a few turns to reach its send.
    for (let turn = 0; turn < 100 && (kafka.producers.length < 2 || kafka.last.pending.length === 0); turn += 1) await settle();
    kafka.last.ack();
    await expect(next).resolves.toEqual(WRITTEN);
    expect(kafka.producers.length).toBe(2);
    expect(kafka.producers[0]?.disconnects).toBe(1);

    // The abandoned send ends when its retries run out; kafkajs may have reconnected meanwhile, so disconnect again.
    kafka.producers[0]?.fail(new Error('retries exhausted'));
    await settle();
    expect(kafka.producers[0]?.disconnects).toBe(2);
  });

  it('cuts sends at maxBatchBytes and settles a write only when all of its sends are acknowledged', async () => {
    // Prepare: each message is a 1,000-byte value plus under 500 bytes of key and headers: two fit in 3,000.
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, { ...DLQ, maxBatchBytes: 3_000 });
    const big = (offset: number) =>
      retryItem({ record: kafkaRecord({ offset, value: Buffer.alloc(1_000) }), origin: { topic: 'o', partition: 0, offset } });

    // Act
    const written = track(writer.write([big(1), big(2), big(3)]));
    await settle();
    expect(offsetsOf(kafka.last.batches[0])).toEqual(['grp.retry.5s@1', 'grp.retry.5s@2']);
    kafka.last.ack();
    await settle();

    // Assess
    expect(written.state).toBe('pending');
    expect(offsetsOf(kafka.last.batches[1])).toEqual(['grp.retry.5s@3']);
    kafka.last.ack();
    await settle();
    expect(written.state).toBe('resolved');
  });

  it('sends a message larger than maxBatchBytes on its own', async () => {
    // Prepare
    const kafka = new FakeKafka();
    kafka.auto = true;
    const writer = new HandOffWriter(kafka, { ...DLQ, maxBatchBytes: 100 });

    // Act
    await writer.write([retryItem({ record: kafkaRecord({ value: Buffer.alloc(5_000) }) }), item(2)]);

    // Assess
    expect(kafka.last.batches).toHaveLength(2);
  });

  it('rejects an aborted write and does not send its queued messages', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);
    const first = writer.write([item(1)]);
    await settle();
    const controller = new AbortController();
    const aborted = writer.write([item(2)], { signal: controller.signal });
    const kept = writer.write([item(3)]);

    // Act
    controller.abort(new Error('deadline'));

    // Assess
    await expect(aborted).rejects.toMatchObject({ name: 'HandOffError', message: 'Hand-off to `grp.retry.5s` aborted' });
    kafka.last.ack();
    await first;
    await settle();
    expect(offsetsOf(kafka.last.batches[1])).toEqual(['grp.retry.5s@3']);
    kafka.last.ack();
    await kept;
  });

  it('bounds the writes sharing one signal with one listener on it, and rejects all of them when it aborts', async () => {
    // Prepare: 50 writes waiting behind a send in flight, all bounded by the invocation's one signal.
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);
    const controller = new AbortController();
    const first = writer.write([item(0)]);
    await settle();
    const writes = Array.from({ length: 50 }, (_, i) => writer.write([item(i + 1)], { signal: controller.signal }));

    // Assess: one listener for all of them (a listener per write would pass Node's limit of 10 and warn).
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(1);

    // Act
    controller.abort(new Error('deadline'));

    // Assess: every write is rejected and none of their copies is sent.
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof HandOffError)).toBe(true);
    kafka.last.ack();
    await first;
    await settle();
    expect(kafka.last.batches).toHaveLength(1);
    expect(writer.pendingCount).toBe(0);
  });

  it('rejects at once with an already aborted signal', async () => {
    const writer = new HandOffWriter(new FakeKafka(), DLQ);
    await expect(writer.write([item(1)], { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(HandOffError);
  });

  it('rejects a malformed item with a RangeError and queues nothing of that write', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);

    // Act / Assess
    await expect(writer.write([item(1), retryItem({ attempt: -1 })])).rejects.toBeInstanceOf(RangeError);
    expect(writer.pendingCount).toBe(0);
    expect(kafka.producers).toHaveLength(0);
  });

  it('resolves an empty write without sending', async () => {
    const kafka = new FakeKafka();
    await new HandOffWriter(kafka, DLQ).write([]);
    expect(kafka.producers).toHaveLength(0);
  });

  it('disconnect waits for queued writes, then disconnects the producer', async () => {
    // Prepare
    const kafka = new FakeKafka();
    const writer = new HandOffWriter(kafka, DLQ);
    const first = track(writer.write([item(1)]));
    await settle();
    const second = track(writer.write([item(2)]));

    // Act
    const disconnected = track(writer.disconnect());
    await settle();
    expect(disconnected.state).toBe('pending');
    kafka.last.ack();
    await settle();
    kafka.last.ack();
    await settle();

    // Assess
    expect([first.state, second.state, disconnected.state]).toEqual(['resolved', 'resolved', 'resolved']);
    expect(kafka.last.disconnects).toBe(1);
  });

  it('connect() connects ahead of the first write, once', async () => {
    // Prepare
    const kafka = new FakeKafka();
    kafka.auto = true;
    const writer = new HandOffWriter(kafka, DLQ);

    // Act
    await writer.connect();
    await writer.write([item(1)]);

    // Assess
    expect(kafka.producers).toHaveLength(1);
    expect(kafka.last.connects).toBe(1);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      'an unknown option',
      { ...DLQ, timeout: 5 },
      /^Expected hand-off writer options among `deadLetterTopic`, `timeoutMs`, `maxBatchBytes`, `allowAutoTopicCreation`, got `timeout`$/,
    ],
    ['no dead-letter topic', {}, /^Expected `deadLetterTopic` to be the group's dead-letter topic \(a non-empty string\), got `undefined`/],
    ['a zero timeout', { ...DLQ, timeoutMs: 0 }, /^Expected `timeoutMs` to be a positive integer, got `0` \(number\)$/],
    ['a fractional batch size', { ...DLQ, maxBatchBytes: 1.5 }, /^Expected `maxBatchBytes` to be a positive integer/],
    ['a string flag', { ...DLQ, allowAutoTopicCreation: 'yes' }, /^Expected `allowAutoTopicCreation` to be a boolean/],
  ])('refuses %s with a ConfigError', (_, options, message) => {
    const given = options as unknown as HandOffWriterOptions;
    expect(() => new HandOffWriter(new FakeKafka(), given)).toThrow(ConfigError);
    expect(() => new HandOffWriter(new FakeKafka(), given)).toThrow(message);
  });
});

describe('HandOffWriter and copies the broker refuses for good', () => {
  /** What kafkajs throws when the broker answers a produce request with Kafka error `type` / `code`. */
  const brokerRefusal = (type: string, code: number, retriable = false): Error => {
    const protocol = new KafkaJSProtocolError({ type, code, retriable, message: `broker says ${type}` } as unknown as Error);
    // kafkajs' retrier passes the cause as a second argument its types leave out.
    const NonRetriable = KafkaJSNonRetriableError as unknown as new (e: Error, metadata: { cause: Error }) => Error;
    return new NonRetriable(protocol, { cause: protocol });
  };
  const valueBytes = (message: Message): number => (message.value === null ? 0 : Buffer.byteLength(message.value));
  /** A broker whose topic `grp.retry.5s` takes no record batch above `limit` bytes of values. */
  const tooLargeAbove = (limit: number) => (batch: ProducerBatch) =>
    (batch.topicMessages ?? []).some(
      ({ topic, messages }) => topic === 'grp.retry.5s' && messages.reduce((sum, m) => sum + valueBytes(m), 0) > limit,
    )
      ? brokerRefusal('MESSAGE_TOO_LARGE', 10)
      : undefined;
  const sized = (offset: number, bytes: number) =>
    retryItem({
      record: kafkaRecord({ offset, value: Buffer.alloc(bytes, 1), headers: [header('trace', `t-${offset}`)] }),
      origin: { topic: 'orders', partition: 3, offset },
      attempt: 3,
    });

  it('finds the one oversized copy of a send, dead-letters it without its value, and writes the others', async () => {
    // Prepare: two writes share one send; one copy is above the limit
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = tooLargeAbove(1_000);
    const writer = new HandOffWriter(kafka, DLQ);

    // Act
    const [first, second] = await Promise.all([writer.write([sized(1, 100), sized(2, 5_000)]), writer.write([sized(3, 100)])]);

    // Assess: outcomes in item order; the refused copy is terminal through a dead letter
    expect(first).toEqual([
      { status: 'written' },
      { status: 'refused', reason: 'too-large', error: { name: 'MESSAGE_TOO_LARGE', message: 'broker says MESSAGE_TOO_LARGE' } },
    ]);
    expect(second).toEqual(WRITTEN);
    const sends = kafka.batches.map(offsetsOf);
    expect(sends).toEqual([
      ['grp.retry.5s@1', 'grp.retry.5s@2', 'grp.retry.5s@3'], // refused as a whole
      ['grp.retry.5s@1'], // then each alone
      ['grp.retry.5s@2'],
      ['grp.dlq@2'],
      ['grp.retry.5s@3'],
    ]);
    const deadLetter = kafka.batches[3]?.topicMessages?.[0]?.messages[0];
    expect(deadLetter?.value).toBeNull();
    expect(deadLetter?.key).toEqual(sized(2, 0).record.key);
    expect(readHandOffHeaders(deadLetter?.headers ?? {})).toMatchObject({
      kind: 'dead-letter',
      originTopic: 'orders',
      originPartition: 3,
      originOffset: 2,
      attempt: 2, // the last run: the refused retry copy was for run 3
      reason: 'too-large',
      errorName: 'TypeError', // what the refused copy carried
      leftOut: 'value',
      originalValueSize: 5_000,
    });
    expect(String(deadLetter?.headers?.['trace'])).toBe('t-2');
    expect(writer.stats).toMatchObject({ failedSends: 2, refused: 1 });
    // Each failed send threw its producer away: a refused send may have landed in part.
    expect(kafka.producers).toHaveLength(3);
  });

  it('sends alone again the copies of a batch refused as a whole, and writes each when each fits', async () => {
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = tooLargeAbove(1_000);
    const writer = new HandOffWriter(kafka, DLQ);
    await expect(writer.write([sized(1, 600), sized(2, 600), sized(3, 600)])).resolves.toEqual([
      { status: 'written' },
      { status: 'written' },
      { status: 'written' },
    ]);
    expect(kafka.batches.map(offsetsOf).slice(1)).toEqual([['grp.retry.5s@1'], ['grp.retry.5s@2'], ['grp.retry.5s@3']]);
  });

  it.each([
    ['INVALID_RECORD', 'invalid-record', 87],
    ['TOPIC_AUTHORIZATION_FAILED', 'topic-authorization-failed', 29],
    ['RECORD_LIST_TOO_LARGE', 'too-large', 18],
  ])('dead-letters a copy refused with %s, reason %s', async (type, reason, code) => {
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = (batch) => (batch.topicMessages?.[0]?.topic === 'grp.retry.5s' ? brokerRefusal(type, code) : undefined);
    const writer = new HandOffWriter(kafka, DLQ);
    const [outcome] = await writer.write([item(7)]);
    expect(outcome).toEqual({ status: 'refused', reason, error: { name: type, message: `broker says ${type}` } });
  });

  it('leaves the key and headers out too when the dead-letter topic refuses the copy without value', async () => {
    // Prepare: a record too large by its headers; the dead-letter topic takes only small records
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = (batch) =>
      (batch.topicMessages ?? []).some(({ messages }) => messages.some((m) => m.headers?.['big'] !== undefined))
        ? brokerRefusal('MESSAGE_TOO_LARGE', 10)
        : undefined;
    const writer = new HandOffWriter(kafka, DLQ);
    const record = kafkaRecord({ offset: 9, headers: [header('big', 'x'.repeat(2_000))] });
    const refused = retryItem({ record, origin: { topic: 'orders', partition: 3, offset: 9 } });

    // Act
    const [outcome] = await writer.write([refused]);

    // Assess
    expect(outcome).toMatchObject({ status: 'refused', reason: 'too-large' });
    const bare = kafka.batches.at(-1)?.topicMessages?.[0];
    expect(bare?.topic).toBe('grp.dlq');
    expect(bare?.messages[0]).toMatchObject({ key: null, value: null });
    expect(readHandOffHeaders(bare?.messages[0]?.headers ?? {})).toMatchObject({ originOffset: 9, leftOut: 'value,key,headers' });
  });

  it('fails the write when the dead-letter topic refuses even a bare dead letter', async () => {
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = () => brokerRefusal('TOPIC_AUTHORIZATION_FAILED', 29);
    const writer = new HandOffWriter(kafka, DLQ);
    await expect(writer.write([item(1)])).rejects.toMatchObject({
      name: 'HandOffError',
      topics: ['grp.dlq'],
      message: expect.stringContaining('refused even a dead letter without value, key and headers'),
    });
  });

  it('still fails the whole write on a failure that may pass', async () => {
    const kafka = new FakeKafka();
    kafka.auto = true;
    kafka.judge = () => brokerRefusal('NOT_ENOUGH_REPLICAS', 19, true);
    const writer = new HandOffWriter(kafka, DLQ);
    await expect(writer.write([item(1), item(2)])).rejects.toBeInstanceOf(HandOffError);
    expect(kafka.batches).toHaveLength(1);
  });
});

describe('the writer partitioner', () => {
  const metadata = (count: number): PartitionerArgs['partitionMetadata'] =>
    Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 1, partitionErrorCode: 0, replicas: [1], isr: [1] }));

  async function messagesAndPartitioner(items: ReturnType<typeof item>[]) {
    const kafka = new FakeKafka();
    kafka.auto = true;
    const writer = new HandOffWriter(kafka, DLQ);
    await writer.write(items);
    const create = kafka.configs[0]?.createPartitioner;
    if (create === undefined) throw new Error('no partitioner');
    const messages: Message[] = (kafka.last.batches[0]?.topicMessages ?? []).flatMap((t) => t.messages);
    return { partitioner: create(), messages };
  }

  it("puts a keyed copy where kafkajs' default (Java-compatible) partitioner does", async () => {
    // Prepare
    const { partitioner, messages } = await messagesAndPartitioner([item(1), retryItem({ record: kafkaRecord({ key: Buffer.from([0xff, 0x00]) }) })]);
    const reference = Partitioners.DefaultPartitioner();

    // Act / Assess
    for (const message of messages) {
      const args = { topic: 't', partitionMetadata: metadata(12), message };
      expect(partitioner(args)).toBe(reference(args));
    }
  });

  it("puts keys of every length and byte where kafkajs' default partitioner does, for any partition count", async () => {
    // Prepare: keys of 0 to 40 bytes (every remainder of 4), high bytes included, and string keys as kafkajs takes them.
    let seed = 7;
    const byte = (): number => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) >>> 24;
    const keys: Array<Buffer | string> = Array.from({ length: 400 }, (_, i) => Buffer.from(Array.from({ length: i % 41 }, byte)));
    keys.push('order-7', 'ключ', '🔑', '');
    const { partitioner } = await messagesAndPartitioner([item(1)]);
    const reference = Partitioners.DefaultPartitioner();

    // Act / Assess
    for (const count of [1, 3, 12, 50]) {
      for (const key of keys) {
        const args = { topic: 't', partitionMetadata: metadata(count), message: { key, value: null } };
        expect([key, partitioner(args)]).toEqual([key, reference(args)]);
      }
    }
  });

  it('gives a keyless copy the same partition every time it is asked, and spreads keyless copies', async () => {
    // Prepare
    const keyless = Array.from({ length: 12 }, (_, i) => retryItem({ record: kafkaRecord({ key: null, offset: i }) }));
    const { partitioner, messages } = await messagesAndPartitioner(keyless);

    // Act
    const first = messages.map((message) => partitioner({ topic: 't', partitionMetadata: metadata(4), message }));
    const again = messages.map((message) => partitioner({ topic: 't', partitionMetadata: metadata(4), message }));

    // Assess
    expect(again).toEqual(first);
    expect(new Set(first).size).toBe(4);
    expect(messages.every((message) => message.key === null)).toBe(true);
  });
});

describe('producerRetry', () => {
  it('fits its retries into the timeout, backing off from 100 ms to 1 s', () => {
    expect(producerRetry(10_000)).toEqual({ initialRetryTime: 100, maxRetryTime: 1_000, multiplier: 2, factor: 0.2, retries: 12 });
  });

  it('keeps at least one retry, which kafkajs requires of an idempotent producer', () => {
    expect(producerRetry(50).retries).toBe(1);
  });
});
