import type { RetryOptions } from 'kafkajs';
import type { ProducerFactory } from '../connections/kafka-client';
import { ConfigError, describeValue } from '../errors';

export interface HandOffWriterOptions {
  /**
   * The group's dead-letter topic (`<group>.dlq`): where a copy the broker refuses for good (too large, invalid,
   * not authorized) goes instead, without its value (see `HandOffOutcome`). Required.
   */
  readonly deadLetterTopic: string;
  /**
   * Longest a `write` may take, from the call until it settles, and longest one send (connect included) may take;
   * the handler must return before the Lambda deadline. Default 10,000.
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
  /** Longest the hand-off of one batch may take; also bounds the producer's retries. */
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
  /** Messages acknowledged by the broker (dead letters without value included). */
  readonly messages: number;
  /** Copies the broker refused for good, each replaced by an acknowledged dead letter without its value. */
  readonly refused: number;
}

export interface WriteOptions {
  /** Aborting rejects the write with a `HandOffError` (what was already sent may still land). */
  readonly signal?: AbortSignal;
}

/** What the writer needs of a Kafka client: a producer factory (the seam's, src/connections/kafka-client.ts). */
export type { ProducerFactory };

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

export function validate(options: HandOffWriterOptions): Required<HandOffWriterOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`Expected the hand-off writer options to be an object, got ${describeValue(options)}`);
  }
  const known = new Set(['deadLetterTopic', ...Object.keys(HAND_OFF_WRITER_DEFAULTS)]);
  const unknown = Object.keys(options).filter((key) => !known.has(key));
  if (unknown.length > 0) {
    throw new ConfigError(
      `Expected hand-off writer options among ${[...known].map((key) => `\`${key}\``).join(', ')}, got ${unknown
        .map((key) => `\`${key}\``)
        .join(', ')}`,
    );
  }
  const resolved = { ...HAND_OFF_WRITER_DEFAULTS, ...options };
  if (typeof resolved.deadLetterTopic !== 'string' || resolved.deadLetterTopic === '') {
    throw new ConfigError(
      'Expected `deadLetterTopic` to be the group\'s dead-letter topic (a non-empty string), got ' +
        describeValue(resolved.deadLetterTopic),
    );
  }
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
