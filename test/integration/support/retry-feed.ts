/**
 * Feeds a group's retry copies back to the function the way a retry trigger would: a consumer on every retry
 * tier topic collects what the processor and the retry function write, and `deliver` hands what arrived so far
 * to the function as one trigger event.
 */
import type { Consumer, IHeaders } from 'kafkajs';
import type { KafkaBatchResponse } from '../../../src/event';
import type { KafkaRecordInput } from '../../../src/event';
import { contextWithin, eventOf } from './kafka-events';
import { createKafka, uniqueName } from './stack';

function headersOf(headers: IHeaders | undefined): Array<{ name: string; value: Buffer }> {
  const out: Array<{ name: string; value: Buffer }> = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined) out.push({ name, value: Buffer.isBuffer(one) ? one : Buffer.from(String(one)) });
    }
  }
  return out;
}

export interface RetryFeedOptions {
  /**
   * The remaining time each delivery gives the function, as Lambda's context tells it (default 60 s). The retry
   * function waits for a copy not due yet until its deadline (less `deadlineMarginMs`) before it writes the copy
   * back, so an event holding a copy due far later (a held lane's watch copy, due half a minute on) lasts this
   * long less the margin: a feed that will see such copies gives shorter invocations.
   */
  readonly invocationMs?: number;
}

export class RetryFeed {
  readonly #queue: KafkaRecordInput[] = [];
  readonly #consumer: Consumer;
  readonly #invocationMs: number;
  /** Every record read, in arrival order. */
  readonly seen: KafkaRecordInput[] = [];

  private constructor(consumer: Consumer, invocationMs: number) {
    this.#consumer = consumer;
    this.#invocationMs = invocationMs;
  }

  /** Starts reading `topics` from the beginning; resolves once the consumer has joined its group. */
  static async start(topics: readonly string[], { invocationMs = 60_000 }: RetryFeedOptions = {}): Promise<RetryFeed> {
    // The broker answers a fetch as soon as a record is there (kafkajs asks for 1 byte): the wait bounds an empty poll
    // only. At 50 ms a feed polled 20 times a second for as long as it lived (a file's feeds until its end): 40 s of
    // retry.test.ts's 64 s of CPU.
    const consumer = createKafka().consumer({ groupId: uniqueName('feed'), maxWaitTimeInMs: 1_000 });
    const feed = new RetryFeed(consumer, invocationMs);
    await consumer.connect();
    for (const topic of topics) await consumer.subscribe({ topic, fromBeginning: true });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const record: KafkaRecordInput = {
          topic, partition, offset: Number(message.offset), timestamp: Number(message.timestamp), timestampType: 'CREATE_TIME',
          key: message.key, value: message.value, headers: headersOf(message.headers),
        };
        feed.#queue.push(record);
        feed.seen.push(record);
      },
    });
    await joined;
    return feed;
  }

  /** The records read since the last call. */
  take(): KafkaRecordInput[] {
    return this.#queue.splice(0);
  }

  get pending(): number {
    return this.#queue.length;
  }

  /**
   * Delivers what arrived, as one event to `process`, until `done()` holds (checked between deliveries); waits
   * for new copies while nothing is queued.
   */
  async feedUntil(
    process: (event: unknown, context: ReturnType<typeof contextWithin>) => Promise<KafkaBatchResponse>,
    done: () => Promise<boolean> | boolean,
    timeoutMs = 120_000,
  ): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > giveUpAt) throw new Error('retry feed: condition not reached in time');
      const records = this.take();
      if (records.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      const response = await process(eventOf(records), contextWithin(this.#invocationMs));
      if (response.batchItemFailures.length > 0) throw new Error(`retry batch not handed off: ${JSON.stringify(response.batchItemFailures)}`);
    }
  }

  async stop(): Promise<void> {
    await this.#consumer.disconnect();
  }
}
