/** The writer's bookkeeping: callers waiting for outcomes, queued copies, the current producer. */
import type { Message, PartitionerArgs } from 'kafkajs';
import type { KafkaProducer } from '../connections/kafka-client';
import * as KafkaJs from 'kafkajs';
import { commonJsExports } from '../connections/interop';
import type { Refusal, Stub } from './refusals';
import type { HandOffItem, HandOffOutcome } from '../ports/handoff';

/** One `write` call: settles when every item has its outcome, or at its first failure. */
export interface Caller {
  outstanding: number;
  settled: boolean;
  readonly outcomes: HandOffOutcome[];
  readonly resolve: (outcomes: HandOffOutcome[]) => void;
  readonly reject: (error: unknown) => void;
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

/**
 * Keyed copies: kafkajs' default partitioner (murmur2 of the key, as the Java client), so one key's copies go to
 * one partition. Keyless copies: their slot modulo the partition count, instead of kafkajs' per-call round-robin,
 * which would move a message to another partition when kafkajs retries a send whose first try the broker may
 * have written — and there the message now in its place would carry the same sequence numbers and be taken for
 * a duplicate.
 */
export function copyPartitioner(slotOf: (message: Message) => number): (args: PartitionerArgs) => number {
  // A static import: this file is reached only through the hand-off writer's `import()`, never at cold start.
  const keyed = commonJsExports(KafkaJs, 'Partitioners').Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.key !== null && message.key !== undefined) return keyed(args);
    return partitionMetadata.length === 0 ? 0 : slotOf(message) % partitionMetadata.length;
  };
}
