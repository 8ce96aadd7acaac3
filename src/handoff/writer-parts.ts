/** The writer's bookkeeping: callers waiting for outcomes, queued copies, the current producer. */
import type { Message, PartitionerArgs } from 'kafkajs';
import type { KafkaProducer } from '../connections/kafka-client';
import type { DeadlineCall } from '../deadline';
import type { Refusal, Stub } from './refusals';
import type { HandOffItem, HandOffOutcome } from '../ports/handoff';

/** One `write` call: settles when every item has its outcome, or at its first failure. */
export interface Caller {
  outstanding: number;
  settled: boolean;
  readonly outcomes: HandOffOutcome[];
  /** The call's promise, bounded by its deadline: answered with the outcomes, or failed. */
  readonly call: DeadlineCall<HandOffOutcome[]>;
}

/** One copy waiting in the writer's queue or in a send. */
export interface Entry {
  readonly caller: Caller;
  /** The item's place in its caller's outcomes. */
  readonly index: number;
  readonly item: HandOffItem;
  readonly topic: string;
  readonly message: Message;
  readonly bytes: number;
  /** Sent in a send of its own: after the broker refused a send for good, to learn which copy it refused. */
  readonly alone: boolean;
  /** Set on the dead letter that replaces a refused copy: the refusal it reports and how much it carries. */
  readonly stub?: { readonly refusal: Refusal; readonly carries: Stub } | undefined;
}

/** The current producer and its (lazy, shared) connect. */
export interface Connection {
  readonly producer: KafkaProducer;
  connected: Promise<void> | undefined;
}

export class SendTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`no acknowledgement within ${timeoutMs} ms`);
    this.name = new.target.name;
  }
}

export function describeTopics(topics: readonly string[]): string {
  return topics.map((topic) => `\`${topic}\``).join(', ');
}

/** The target topics of `items`, each once (named in an error only). */
export function topicsOf(items: readonly HandOffItem[]): string[] {
  return [...new Set(items.map(({ topic }) => topic))];
}

/**
 * A message's own partition when it names one (an output may). Keyed copies: the partition kafkajs' default
 * partitioner gives (murmur2 of the key, as the Java client), so one key's copies go to one partition. Keyless copies: their slot modulo the partition count, instead of kafkajs' per-call
 * round-robin, which would move a message to another partition when kafkajs retries a send whose first try the broker
 * may have written — and there the message now in its place would carry the same sequence numbers and be taken for
 * a duplicate.
 */
export function copyPartitioner(slotOf: (message: Message) => number): (args: PartitionerArgs) => number {
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== undefined && message.partition !== null) return message.partition;
    const key = message.key;
    if (key === null || key === undefined) return partitionMetadata.length === 0 ? 0 : slotOf(message) % partitionMetadata.length;
    return (murmur2(typeof key === 'string' ? Buffer.from(key) : key) & 0x7fffffff) % partitionMetadata.length;
  };
}

const MURMUR_M = 0x5bd1e995;

/**
 * Kafka's murmur2 of `data` (the Java client's `Utils.murmur2`), in 32-bit arithmetic: what kafkajs' default
 * partitioner computes with a 64-bit `Long` per step (a BigInt and several objects per copy).
 *
 * @example
 * (murmur2(Buffer.from('order-7')) & 0x7fffffff) % 12; // the partition of key `order-7` among 12, as the Java client's
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = 0x9747b28c ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, MURMUR_M);
    k ^= k >>> 24;
    h = Math.imul(h, MURMUR_M) ^ Math.imul(k, MURMUR_M);
  }
  const rest = length & 3;
  if (rest > 0) {
    if (rest === 3) h ^= data[whole + 2]! << 16;
    if (rest >= 2) h ^= data[whole + 1]! << 8;
    h = Math.imul(h ^ data[whole]!, MURMUR_M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, MURMUR_M);
  return h ^ (h >>> 15);
}
