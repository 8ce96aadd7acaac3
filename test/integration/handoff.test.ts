import { Kafka, logLevel, type IHeaders, type KafkaMessage } from 'kafkajs';
import type { KafkaRecord } from '../../src/event';
import {
  HandOffError,
  HandOffHeader,
  HandOffWriter,
  handOffMessage,
  originOf,
  readHandOffHeaders,
  type HandOffItem,
  type HandOffWriterOptions,
} from '../../src/handoff';
import { kafkaRecord } from '../support/records';
import { createKafka, createTopic, deleteTopics, uniqueName } from './support/stack';

interface Received {
  readonly topic: string;
  readonly partition: number;
  readonly message: KafkaMessage;
}

/** Reads `count` messages from `topics` from the beginning, with a fresh consumer group. */
async function consume(topics: readonly string[], count: number, timeoutMs = 30_000): Promise<Received[]> {
  const consumer = createKafka().consumer({ groupId: uniqueName('handoff-reader') });
  await consumer.connect();
  const received: Received[] = [];
  try {
    await consumer.subscribe({ topics: [...topics], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Expected ${count} messages from ${topics.join(', ')}, got ${received.length}`)),
        timeoutMs,
      );
      consumer
        .run({
          eachMessage: async ({ topic, partition, message }) => {
            received.push({ topic, partition, message });
            if (received.length >= count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return received;
}


const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');

/** A record with neither key nor value unless `overrides` gives them. */
function record(overrides: Partial<KafkaRecord>): KafkaRecord {
  return kafkaRecord({ key: null, value: null, ...overrides });
}

/** A consumer's headers object as values per name, decoded as Buffers. */
function valuesOf(headers: IHeaders | undefined, name: string): Buffer[] {
  const value = headers?.[name];
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.map((one) => (Buffer.isBuffer(one) ? one : utf8(one)));
}

describe('hand-off writer on a real broker', () => {
  const created: string[] = [];
  const writers: HandOffWriter[] = [];

  async function topic(prefix: string, partitions: number): Promise<string> {
    const name = uniqueName(prefix);
    await createTopic(name, partitions);
    created.push(name);
    return name;
  }

  /** A writer; its dead-letter topic is used only by copies the broker refuses for good. */
  function writer(kafka: Kafka = createKafka(), options: Partial<HandOffWriterOptions> = {}): HandOffWriter {
    const instance = new HandOffWriter(kafka, { deadLetterTopic: uniqueName('handoff-unused.dlq'), ...options });
    writers.push(instance);
    return instance;
  }

  afterAll(async () => {
    await Promise.all(writers.map((instance) => instance.disconnect().catch(() => undefined)));
    await deleteTopics(created);
  });

  it('writes retry and dead-letter copies with the original key, value and headers plus the framework headers', async () => {
    // Prepare
    const retryTopic = await topic('handoff-retry', 3);
    const deadLetterTopic = await topic('handoff-dlq', 1);
    const binary = Buffer.from([0x00, 0xff, 0x80, 0x7f]);
    const textKeyed = record({
      offset: 10,
      key: utf8('customer-1'),
      value: utf8('{"id":1}'),
      headers: [
        { name: 'trace-id', value: utf8('abc') },
        { name: 'hop', value: utf8('first') },
        { name: 'región', value: utf8('São Paulo ✓ 東京') },
        { name: 'hop', value: utf8('second') },
        { name: 'bin', value: binary },
      ],
    });
    const keyless = record({ offset: 11, key: null, value: binary });
    const binaryKeyed = record({ offset: 12, key: Buffer.from([0xde, 0xad, 0x00, 0xef]), value: null });
    // A retry copy read back from a retry topic, which now goes to the dead-letter topic.
    const firstCopy = handOffMessage({
      record: record({ offset: 13, key: utf8('customer-2'), value: utf8('v'), headers: [{ name: 'trace-id', value: utf8('xyz') }] }),
      origin: { topic: 'orders', partition: 0, offset: 13 },
      kind: 'retry',
      topic: retryTopic,
      attempt: 2,
      dueAtMs: 1718000005000,
      firstFailureAtMs: 1718000000500,
      error: { name: 'Error', message: 'first failure' },
    });
    const copy = record({
      topic: retryTopic,
      partition: 1,
      offset: 99,
      key: utf8('customer-2'),
      value: utf8('v'),
      headers: Object.entries(firstCopy.headers ?? {}).flatMap(([name, value]) => valuesOf({ [name]: value }, name).map((one) => ({ name, value: one }))),
    });
    const now = Date.now();
    const retry = (r: KafkaRecord): HandOffItem => ({
      record: r,
      origin: originOf(r),
      kind: 'retry',
      topic: retryTopic,
      attempt: 2,
      dueAtMs: now + 5_000,
      firstFailureAtMs: now,
      error: { name: 'TypeError', message: `failed ${r.offset}` },
    });
    const items: HandOffItem[] = [
      retry(textKeyed),
      retry(keyless),
      { ...retry(binaryKeyed), deferred: true, attempt: 1, error: undefined },
      {
        record: copy,
        origin: originOf(copy),
        kind: 'dead-letter',
        topic: deadLetterTopic,
        attempt: 5,
        dueAtMs: now,
        firstFailureAtMs: 1718000000500,
        error: { name: 'NonRetriableError', message: 'x'.repeat(3_000) },
        reason: 'non-retriable',
      },
    ];
    const handOff = writer();

    // Act
    await handOff.write(items);
    const received = await consume([retryTopic, deadLetterTopic], 4);

    // Assess
    expect(handOff.stats).toEqual({ sends: 1, failedSends: 0, messages: 4, refused: 0 });
    const byOrigin = new Map(received.map((r) => [readHandOffHeaders(r.message.headers ?? {}).originOffset, r]));

    const text = byOrigin.get(10);
    expect(text?.topic).toBe(retryTopic);
    expect(text?.message.key).toEqual(utf8('customer-1'));
    expect(text?.message.value).toEqual(utf8('{"id":1}'));
    const headers = text?.message.headers ?? {};
    expect(Object.keys(headers).filter((name) => !name.startsWith('lanes-'))).toEqual(['trace-id', 'hop', 'región', 'bin']);
    expect(valuesOf(headers, 'hop')).toEqual([utf8('first'), utf8('second')]);
    expect(valuesOf(headers, 'región')).toEqual([utf8('São Paulo ✓ 東京')]);
    expect(valuesOf(headers, 'bin')).toEqual([binary]);
    expect(readHandOffHeaders(headers)).toEqual({
      originTopic: 'orders',
      originPartition: 0,
      originOffset: 10,
      originTimestamp: 1718000000000,
      kind: 'retry',
      attempt: 2,
      dueAtMs: now + 5_000,
      firstFailureAtMs: now,
      errorName: 'TypeError',
      errorMessage: 'failed 10',
      reason: undefined,
      deferred: undefined,
    });

    const noKey = byOrigin.get(11);
    expect(noKey?.message.key).toBeNull();
    expect(noKey?.message.value).toEqual(binary);

    const binaryKey = byOrigin.get(12);
    expect(binaryKey?.message.key).toEqual(Buffer.from([0xde, 0xad, 0x00, 0xef]));
    expect(binaryKey?.message.value).toBeNull();
    expect(readHandOffHeaders(binaryKey?.message.headers ?? {})).toMatchObject({ deferred: true, attempt: 1, errorName: undefined });

    const dead = byOrigin.get(13);
    expect(dead?.topic).toBe(deadLetterTopic);
    expect(dead?.message.key).toEqual(utf8('customer-2'));
    const deadHeaders = dead?.message.headers ?? {};
    expect(valuesOf(deadHeaders, 'trace-id')).toEqual([utf8('xyz')]);
    for (const name of Object.values(HandOffHeader)) expect(valuesOf(deadHeaders, name).length).toBeLessThanOrEqual(1);
    const read = readHandOffHeaders(deadHeaders);
    expect(read).toMatchObject({
      originTopic: 'orders',
      originPartition: 0,
      originOffset: 13,
      kind: 'dead-letter',
      attempt: 5,
      firstFailureAtMs: 1718000000500,
      errorName: 'NonRetriableError',
      reason: 'non-retriable',
    });
    expect(read.errorMessage).toHaveLength(1_000);
    expect(read.errorMessage?.endsWith('… [truncated from 3000 chars]')).toBe(true);
  });

  it("puts every copy of one key in one partition of the retry topic, across writes", async () => {
    // Prepare
    const retryTopic = await topic('handoff-keys', 6);
    const handOff = writer();
    const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const item = (key: string, offset: number): HandOffItem => {
      const r = record({ offset, key: utf8(key), value: utf8(`${key}-${offset}`) });
      return { record: r, origin: originOf(r), kind: 'retry', topic: retryTopic, attempt: 2, dueAtMs: 0, firstFailureAtMs: 0 };
    };

    // Act: three rounds, each its own write.
    for (let round = 0; round < 3; round += 1) {
      await handOff.write(keys.map((key, i) => item(key, round * 10 + i)));
    }
    const received = await consume([retryTopic], 15);

    // Assess
    const partitionsByKey = new Map<string, Set<number>>();
    for (const { partition, message } of received) {
      const key = message.key?.toString() ?? '';
      partitionsByKey.set(key, (partitionsByKey.get(key) ?? new Set()).add(partition));
    }
    expect([...partitionsByKey.keys()].sort()).toEqual([...keys].sort());
    for (const partitions of partitionsByKey.values()) expect(partitions.size).toBe(1);
  });

  it('coalesces 200 concurrent writes into far fewer sends, and every copy lands', async () => {
    // Prepare
    const retryTopic = await topic('handoff-burst', 3);
    const deadLetterTopic = await topic('handoff-burst-dlq', 1);
    const handOff = writer();
    await handOff.connect();
    const item = (offset: number): HandOffItem => {
      const r = record({ offset, key: offset % 7 === 0 ? null : utf8(`k${offset % 20}`), value: utf8(`v${offset}`) });
      return {
        record: r,
        origin: originOf(r),
        kind: offset % 10 === 0 ? 'dead-letter' : 'retry',
        topic: offset % 10 === 0 ? deadLetterTopic : retryTopic,
        attempt: 2,
        dueAtMs: 0,
        firstFailureAtMs: 0,
      };
    };

    // Act: 200 writes arriving over ~50 ms, as handler failures would, each awaited by its own caller.
    const started = Date.now();
    const latencies: number[] = [];
    await Promise.all(
      Array.from(
        { length: 200 },
        (_, offset) =>
          new Promise<void>((resolve, reject) => {
            setTimeout(() => {
              const at = Date.now();
              handOff
                .write([item(offset)])
                .then(() => {
                  latencies.push(Date.now() - at);
                  resolve();
                })
                .catch(reject);
            }, Math.floor(offset / 4));
          }),
      ),
    );
    const elapsed = Date.now() - started;
    const received = await consume([retryTopic, deadLetterTopic], 200);

    // Assess
    const { sends, failedSends, messages } = handOff.stats;
    latencies.sort((a, b) => a - b);
    console.info(
      `200 writes over ${elapsed} ms: ${sends} sends, write latency p50 ${latencies[100]} ms, max ${latencies[199]} ms`,
    );
    expect(failedSends).toBe(0);
    expect(messages).toBe(200);
    expect(sends).toBeLessThanOrEqual(40);
    const origins = received.map((r) => readHandOffHeaders(r.message.headers ?? {}).originOffset);
    expect(new Set(origins).size).toBe(200);
    expect(received.filter((r) => r.topic === deadLetterTopic)).toHaveLength(20);
  });

  it('rejects a write to a missing topic within timeoutMs, then writes to an existing one', async () => {
    // Prepare
    const retryTopic = await topic('handoff-after-missing', 1);
    const missing = uniqueName('handoff-missing');
    const handOff = writer(createKafka(), { timeoutMs: 2_000 });
    const item = (target: string): HandOffItem => {
      const r = record({ offset: 1, key: utf8('k'), value: utf8('v') });
      return { record: r, origin: originOf(r), kind: 'retry', topic: target, attempt: 2, dueAtMs: 0, firstFailureAtMs: 0 };
    };
    const started = Date.now();

    // Act / Assess
    const error = await handOff.write([item(missing)]).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(error).toBeInstanceOf(HandOffError);
    expect((error as HandOffError).topics).toEqual([missing]);
    expect((error as HandOffError).message).toContain(missing);
    const admin = createKafka().admin();
    await admin.connect();
    expect(await admin.listTopics()).not.toContain(missing);
    await admin.disconnect();
    await handOff.write([item(retryTopic)]);
    expect(await consume([retryTopic], 1)).toHaveLength(1);
  });

  describe('to a topic that refuses large records (max.message.bytes 4096)', () => {
    const LIMIT = { 'max.message.bytes': '4096' };
    const copy = (target: string, offset: number, valueBytes: number): HandOffItem => {
      const r = record({
        topic: 'orders',
        partition: 2,
        offset,
        key: utf8(`customer-${offset}`),
        value: Buffer.alloc(valueBytes, 0x61),
        headers: [{ name: 'trace-id', value: utf8(`trace-${offset}`) }],
      });
      return {
        record: r,
        origin: originOf(r),
        kind: 'retry',
        topic: target,
        attempt: 2,
        dueAtMs: 0,
        firstFailureAtMs: 1718000000000,
        error: { name: 'Error', message: 'handler failed' },
      };
    };

    it('dead-letters the oversized copy without its value and writes the copies that shared its send', async () => {
      // Prepare: the retry topic takes no record above 4 KB; the dead-letter topic has broker defaults
      const retryTopic = uniqueName('handoff-small');
      await createTopic(retryTopic, 1, LIMIT);
      created.push(retryTopic);
      const deadLetterTopic = await topic('handoff-small-dlq', 1);
      const handOff = writer(createKafka(), { deadLetterTopic });

      // Act: two callers in one tick share one send, one oversized copy among them
      const [mixed, other] = await Promise.all([
        handOff.write([copy(retryTopic, 1, 100), copy(retryTopic, 2, 10_000), copy(retryTopic, 3, 100)]),
        handOff.write([copy(retryTopic, 4, 100)]),
      ]);

      // Assess: one outcome per item, in order
      expect(mixed).toEqual([
        { status: 'written' },
        { status: 'refused', reason: 'too-large', error: { name: 'MESSAGE_TOO_LARGE', message: expect.any(String) } },
        { status: 'written' },
      ]);
      expect(other).toEqual([{ status: 'written' }]);
      const retried = await consume([retryTopic], 3);
      expect(retried.map((r) => readHandOffHeaders(r.message.headers ?? {}).originOffset).sort()).toEqual([1, 3, 4]);
      const [deadLetter] = await consume([deadLetterTopic], 1);
      expect(deadLetter?.message.value).toBeNull();
      expect(deadLetter?.message.key).toEqual(utf8('customer-2'));
      expect(valuesOf(deadLetter?.message.headers, 'trace-id')).toEqual([utf8('trace-2')]);
      expect(readHandOffHeaders(deadLetter?.message.headers ?? {})).toMatchObject({
        kind: 'dead-letter',
        originTopic: 'orders',
        originPartition: 2,
        originOffset: 2,
        attempt: 1,
        reason: 'too-large',
        errorMessage: 'handler failed',
        leftOut: 'value',
        originalValueSize: 10_000,
      });
      expect(handOff.stats.refused).toBe(1);
    });

    it("dead-letters the issue's case: a 1,048,400-byte value the source took, whose retry copy a default topic refuses", async () => {
      // Prepare: broker defaults (max.message.bytes 1,048,588): the copy's ~300 bytes of framework headers tip it over
      const retryTopic = await topic('handoff-default-limit', 1);
      const deadLetterTopic = await topic('handoff-default-limit-dlq', 1);
      const handOff = writer(createKafka(), { deadLetterTopic });

      // Act
      const outcomes = await handOff.write([copy(retryTopic, 7, 1_048_400), copy(retryTopic, 8, 10)]);

      // Assess
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['refused', 'written']);
      const [deadLetter] = await consume([deadLetterTopic], 1);
      expect(readHandOffHeaders(deadLetter?.message.headers ?? {})).toMatchObject({ originOffset: 7, reason: 'too-large', originalValueSize: 1_048_400 });
    });

    it('writes every copy when only their send together is too large', async () => {
      // Prepare: ten 1 KB copies: each fits, one send of all of them does not
      const retryTopic = uniqueName('handoff-small-batch');
      await createTopic(retryTopic, 1, LIMIT);
      created.push(retryTopic);
      const handOff = writer();

      // Act
      const outcomes = await handOff.write(Array.from({ length: 10 }, (_, i) => copy(retryTopic, i, 1_000)));

      // Assess
      expect(outcomes).toEqual(Array.from({ length: 10 }, () => ({ status: 'written' })));
      const received = await consume([retryTopic], 10);
      expect(new Set(received.map((r) => readHandOffHeaders(r.message.headers ?? {}).originOffset)).size).toBe(10);
      expect(handOff.stats.refused).toBe(0);
    });
  });

  describe('with an unreachable broker', () => {
    const unreachable = (retry?: { retries: number }): Kafka =>
      new Kafka({ clientId: uniqueName('unreachable'), brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING, ...(retry ? { retry } : {}) });
    const item = (): HandOffItem => {
      const r = record({ offset: 1, key: utf8('k'), value: utf8('v') });
      return { record: r, origin: originOf(r), kind: 'retry', topic: 'nowhere.retry.5s', attempt: 2, dueAtMs: 0, firstFailureAtMs: 0 };
    };

    it('rejects with a HandOffError at timeoutMs while the client is still retrying', async () => {
      // Prepare
      const handOff = writer(unreachable(), { timeoutMs: 2_000 });
      const started = Date.now();

      // Act
      const error = await handOff.write([item()]).catch((e: unknown) => e);

      // Assess
      const elapsed = Date.now() - started;
      console.info(`unreachable broker, client retrying: rejected after ${elapsed} ms (timeoutMs 2000)`);
      expect(error).toBeInstanceOf(HandOffError);
      expect(error).toMatchObject({ retriable: true, topics: ['nowhere.retry.5s'] });
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(2_500);
    });

    it('rejects with a HandOffError carrying the connection error when the client gives up first', async () => {
      // Prepare
      const handOff = writer(unreachable({ retries: 0 }), { timeoutMs: 10_000 });
      const started = Date.now();

      // Act
      const error = await handOff.write([item()]).catch((e: unknown) => e);

      // Assess
      const elapsed = Date.now() - started;
      console.info(`unreachable broker, client without retries: rejected after ${elapsed} ms (timeoutMs 10000)`);
      expect(error).toBeInstanceOf(HandOffError);
      expect((error as HandOffError).message).toMatch(/ECONNREFUSED|Connection error/);
      expect(elapsed).toBeLessThan(10_000);
    });

    it('rejects with the default timeoutMs (10 s) too', async () => {
      // Prepare
      const handOff = writer(unreachable());
      const started = Date.now();

      // Act
      const error = await handOff.write([item()]).catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(HandOffError);
      expect(Date.now() - started).toBeLessThan(10_500);
    }, 20_000);
  });
});
