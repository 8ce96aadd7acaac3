import type { Consumer, KafkaMessage, Producer } from 'kafkajs';
import type { PartitionRef } from '../ports/partition';
import { parkPayload, handOffNewHead } from '../lanes/lane-heads';
import { laneIdOf } from '../lanes/lane-id';
import { recordOfMessage, type KafkaRecord } from '../event';
import { HandOffHeader, readHandOffHeaders } from '../handoff/headers';
import { writeReplay } from '../handoff/replay';
import type { LanesOptions } from '../options/lanes-options';
import { retryTopic } from '../options/names';
import { tierFor } from '../options/retry-tiers';
import { originalOf } from '../retry/admit';
import { ConfigError } from '../errors';
import { scopeOf, type OperatorParts } from './lanes';

/**
 * The operator commands on the dead-letter topic: read it (`kafka-lanes dlq list`, the dashboard's browser) and
 * replay it (`kafka-lanes dlq replay`): a held head resumed in its lane, any other dead letter written back to its
 * origin topic through `handoff/` (`copies.replay`, `writeReplay`).
 */

/** The header a replayed dead letter carries back to its origin topic: where it was read in the dead-letter topic. */
export const REPLAY_OF_HEADER = HandOffHeader.ReplayOf;

/** One dead letter, as a replay sees it. */
export interface DeadLetter {
  readonly record: KafkaRecord;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: number | undefined };
  /** The lane its copy carries (its `lane` fact); see `laneOfDeadLetter` for copies written before it. */
  readonly lane: string | undefined;
  readonly reason: string | undefined;
}

/** What a replay did (or, dry, would do) with one dead letter. */
export interface ReplayAction {
  readonly deadLetter: { readonly partition: number; readonly offset: number };
  readonly origin: DeadLetter['origin'];
  readonly action: 'resumed-held-head' | 'written-back' | 'skipped';
  readonly detail: string;
}

export interface ReplayFilter {
  /** Only the dead letter at this position of the dead-letter topic. */
  readonly position?: { readonly partition: number; readonly offset: number };
  readonly originTopic?: string;
  readonly lane?: string;
  /** Dead letters written at or after this (epoch ms). */
  readonly sinceMs?: number;
}

/**
 * The lane of a dead letter: the one its copy carries (its `lane` fact), else, for a copy written before that
 * header existed, the one the engine derives from the record as first read with the group's options
 * (ordering, `nullKey`, `keyOf`, hashed long keys). `undefined`: a record of no lane, or `keyOf` threw.
 */
export function laneOfDeadLetter(letter: DeadLetter, options: Pick<LanesOptions, 'ordering' | 'nullKey' | 'keyOf'>): string | undefined {
  if (letter.lane !== undefined) return letter.lane;
  if (letter.origin.offset === undefined) return undefined;
  try {
    return laneIdOf(originalOf(letter.record, { ...letter.origin, offset: letter.origin.offset }), options);
  } catch {
    return undefined;
  }
}

/** Reads the whole dead-letter topic of a group, up to its end when the call started. */
export async function readDeadLetters(consumer: Consumer, topic: string, ends: ReadonlyArray<{ partition: number; high: string; low: string }>): Promise<DeadLetter[]> {
  const pending = new Map(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]));
  const letters: DeadLetter[] = [];
  if (pending.size === 0) return letters;
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const end = pending.get(partition);
        if (end === undefined || Number(message.offset) >= end) return;
        letters.push(toDeadLetter(topic, partition, message));
        if (Number(message.offset) >= end - 1) pending.delete(partition);
        if (pending.size === 0) resolve();
      },
    }).catch(reject);
  });
  return letters.sort((a, b) => a.record.partition - b.record.partition || a.record.offset - b.record.offset);
}

/** A message read from the dead-letter topic, as a replay sees it (the `dlq replay` command and the dashboard). */
export function toDeadLetter(topic: string, partition: number, message: KafkaMessage): DeadLetter {
  const record = recordOfMessage(topic, partition, message);
  const facts = readHandOffHeaders(record.headers);
  return {
    record,
    origin: { topic: facts.originTopic ?? topic, partition: facts.originPartition ?? partition, offset: facts.originOffset },
    lane: facts.lane,
    reason: facts.reason,
  };
}

/** Which dead letters a replay takes, and whether it only says what it would do. */
export interface ReplayRequest extends ReplayFilter {
  /** Decide and report what would be done (each detail says "would"), change nothing. */
  readonly dryRun?: boolean;
}

/**
 * What a replay writes with: the operator parts, and the producer a dead letter is written back to its origin
 * topic through (acks=all). Not the hand-off writer: a copy it cannot write becomes a dead letter without its value,
 * where a replay the broker refuses must be the command's error, its dead letter left as it is.
 */
export type ReplayParts = OperatorParts & { readonly producer?: Pick<Producer, 'send'> };

/**
 * `kafka-lanes dlq replay`: a held lane's head is resumed in order as attempt 1 (its lane was waiting for it);
 * any other dead letter is written back to its origin topic with a `lanes-replay-of` header, as a new record:
 * its order relative to later records of its key is not kept. The latest dead letter of each origin counts.
 *
 * @throws ConfigError when a dead letter is to be written back and `parts` has no producer.
 */
export async function replayDeadLetters(parts: ReplayParts, letters: readonly DeadLetter[], request: ReplayRequest = {}): Promise<ReplayAction[]> {
  const { group } = parts.options;
  const { dryRun = false, ...filter } = request;
  const latest = new Map<string, DeadLetter>();
  const actions: ReplayAction[] = [];
  for (const read of letters) {
    const letter = { ...read, lane: laneOfDeadLetter(read, parts.options) };
    const at = { partition: letter.record.partition, offset: letter.record.offset };
    if (filter.position !== undefined && (at.partition !== filter.position.partition || at.offset !== filter.position.offset)) continue;
    if (filter.originTopic !== undefined && letter.origin.topic !== filter.originTopic) continue;
    if (filter.lane !== undefined && letter.lane !== filter.lane) continue;
    if (filter.sinceMs !== undefined && letter.record.timestamp < filter.sinceMs) continue;
    if (letter.origin.offset === undefined || letter.reason === 'malformed' || letter.reason === 'duplicate-offset') {
      actions.push({ deadLetter: at, origin: letter.origin, action: 'skipped', detail: `not replayable (reason ${letter.reason ?? 'unknown'}): the record as received is in its value` });
      continue;
    }
    latest.set(`${letter.origin.topic}\n${letter.origin.partition}\n${letter.origin.offset}`, letter);
  }
  const scope = scopeOf(parts);
  for (const letter of latest.values()) {
    const at = { partition: letter.record.partition, offset: letter.record.offset };
    const ref: PartitionRef = { group, topic: letter.origin.topic, partition: letter.origin.partition };
    const head = letter.lane === undefined ? undefined : await parts.store.laneHead(ref, letter.lane);
    if (head !== undefined && head.state === 'held' && head.offset === letter.origin.offset) {
      const tier = retryTopic(group, tierFor(0, parts.options.retry.tiers));
      const resumed = `lane ${letter.lane} in order: attempt 1 in ${tier}`;
      actions.push({ deadLetter: at, origin: letter.origin, action: 'resumed-held-head', detail: dryRun ? `would resume held ${resumed}` : `resumed held ${resumed}` });
      if (dryRun) continue;
      const origin = { topic: ref.topic, partition: ref.partition, offset: head.offset };
      // The lease and the payload first, then the copy, then the lease off: a crash in between is re-driven.
      await parts.store.advance(ref, letter.lane!, head, { attempt: 1, state: 'retrying', dueAtMs: scope.now(), leaseUntilMs: scope.leaseUntilMs, payload: parkPayload(letter.record) });
      await handOffNewHead(scope, ref, letter.lane!, { offset: origin.offset, payload: parkPayload(letter.record) });
      continue;
    }
    const esmDecoded = letter.record.headers.find((header) => header.name === HandOffHeader.EsmDecoded);
    if (esmDecoded !== undefined) {
      // JSON its trigger decoded, not the producer's bytes: the origin topic's other readers could not read it.
      const parts = esmDecoded.value.toString('latin1');
      actions.push({ deadLetter: at, origin: letter.origin, action: 'skipped', detail: `not written back to ${letter.origin.topic}: its ${parts} is the JSON its trigger's schema registry integration decoded (eventRecordFormat JSON), not the producer's bytes` });
      continue;
    }
    const written = `to ${letter.origin.topic} as a new record (its order relative to later records of its key is not kept)`;
    actions.push({ deadLetter: at, origin: letter.origin, action: 'written-back', detail: dryRun ? `would be written back ${written}` : `written back ${written}` });
    if (dryRun) continue;
    // Its identity goes with it: `ctx.idempotencyKey` and its completed steps stay those of its first origin.
    const origin = { topic: letter.origin.topic, partition: letter.origin.partition, offset: letter.origin.offset! };
    if (parts.producer === undefined) throw new ConfigError('dlq replay writes a dead letter back through a producer: the operator parts have none');
    await writeReplay(parts.producer, scope.copies.replay({ record: letter.record, origin }));
  }
  return actions;
}

