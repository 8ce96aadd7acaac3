import type { Consumer, IHeaders, KafkaMessage, Producer } from 'kafkajs';
import type { CompletionStore } from '../completion/store';
import type { PartitionRef } from '../ports/partition';
import { LanesError } from '../errors';
import { handOffNewHead, parkPayload, type LaneHeadScope } from '../lanes/lane-heads';
import { laneIdOf } from '../lanes/lane-id';
import type { CompletionPort } from '../ports/completion';
import type { HandOffSink } from '../ports/handoff';
import { decodeKafkaEvent, encodeKafkaRecord, type KafkaRecord } from '../event';
import { copiesFor } from '../handoff/copies';
import { HEADER_PREFIX, readHandOffHeaders } from '../handoff/headers';
import { FIRST_ORIGIN_HEADER, firstOriginOf, formatFirstOrigin } from '../engine/idempotency-key';
import type { LanesOptions } from '../options/lanes-options';
import { deadLetterTopic, retryTopic } from '../options/names';
import { tierFor } from '../options/retry-tiers';
import { originalOf } from './admit';

/** The header a replayed dead letter carries back to its origin topic: where it was read in the dead-letter topic. */
export const REPLAY_OF_HEADER = `${HEADER_PREFIX}replay-of`;

/** How long an operator's lease on a lane head lasts: far longer than one command takes. */
const OPERATOR_LEASE_MS = 5 * 60_000;

/** An operator command was asked for something the lane's state does not allow; nothing changed. */
export class LaneStateError extends LanesError {}

/** What operator commands need: the group's options (tiers), the completion store and a hand-off writer. */
export interface OperatorParts {
  readonly options: LanesOptions;
  readonly store: CompletionStore;
  readonly sink: HandOffSink;
  readonly now?: () => number;
}

/** What a lane command needs: any completion store (the in-memory model of `kafka-lanes/testing` too). */
export type LaneOperatorParts = Omit<OperatorParts, 'store'> & { readonly store: CompletionPort };

function scopeOf(parts: LaneOperatorParts): LaneHeadScope {
  const now = parts.now ?? Date.now;
  const { options } = parts;
  return {
    options,
    store: parts.store,
    leaseUntilMs: now() + OPERATOR_LEASE_MS,
    now,
    write: (items) => parts.sink.write(items),
    copies: copiesFor(options, now),
  };
}

/**
 * `kafka-lanes lane release`: skips a held head (it is in the dead-letter topic already) and resumes the lane
 * in order: its next parked record is handed to the first retry tier, due now, with its full attempt budget.
 *
 * @throws LaneStateError when the lane is free or its head is not held (a retrying head is not skipped).
 * @example
 * const result = await releaseHeldLane(parts, { group: 'orders', topic: 'orders', partition: 3 }, 'Y3VzdC00Mg==');
 * // { skipped: 41, next: 57 }
 */
export async function releaseHeldLane(parts: LaneOperatorParts, ref: PartitionRef, lane: string): Promise<{ skipped: number; next: number | undefined }> {
  const head = await parts.store.laneHead(ref, lane);
  if (head === undefined) throw new LaneStateError(`lane \`${lane}\` of ${ref.topic}-${ref.partition} is not blocked: nothing to release`);
  if (head.state !== 'held') {
    throw new LaneStateError(
      `lane \`${lane}\` of ${ref.topic}-${ref.partition} is retrying offset ${head.offset} (attempt ${head.attempt}), not held: only a held head is skipped`,
    );
  }
  const scope = scopeOf(parts);
  const next = await parts.store.release(ref, lane, head.offset, 1, scope.now(), scope.leaseUntilMs);
  if (next !== undefined) await handOffNewHead(scope, ref, lane, next);
  return { skipped: head.offset, next: next?.offset };
}

/** One dead letter, as a replay sees it. */
export interface DeadLetter {
  readonly record: KafkaRecord;
  readonly origin: { readonly topic: string; readonly partition: number; readonly offset: number | undefined };
  /** The lane its copy carries (`lanes-lane`); see `laneOfDeadLetter` for copies written before it. */
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
 * The lane of a dead letter: the one its copy carries (`lanes-lane`), else, for a copy written before that
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
  const headers = Object.entries(message.headers ?? {}).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : value === undefined ? [] : [value]).map((one) => ({ name, value: Buffer.isBuffer(one) ? one : Buffer.from(String(one)) })));
  const raw = encodeKafkaRecord({
    topic, partition, offset: Number(message.offset), timestamp: Number(message.timestamp), key: message.key, value: message.value, headers,
  });
  const record = decodeKafkaEvent({ eventSource: 'SelfManagedKafka', records: { [`${topic}-${partition}`]: [raw] } }).partitions[0]!.records[0]!;
  const facts = readHandOffHeaders(record.headers);
  return {
    record,
    origin: { topic: facts.originTopic ?? topic, partition: facts.originPartition ?? partition, offset: facts.originOffset },
    lane: facts.lane,
    reason: facts.reason,
  };
}

/**
 * `kafka-lanes dlq replay`: a held lane's head is resumed in order as attempt 1 (its lane was waiting for it);
 * any other dead letter is written back to its origin topic with a `lanes-replay-of` header, as a new record:
 * its order relative to later records of its key is not kept. The latest dead letter of each origin counts.
 * `dryRun`: decide and report what would be done (each detail says "would"), change nothing.
 */
export async function replayDeadLetters(
  parts: OperatorParts,
  letters: readonly DeadLetter[],
  filter: ReplayFilter,
  producer: Pick<Producer, 'send'> | undefined,
  dryRun: boolean,
): Promise<ReplayAction[]> {
  const { group } = parts.options;
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
    const written = `to ${letter.origin.topic} as a new record (its order relative to later records of its key is not kept)`;
    actions.push({ deadLetter: at, origin: letter.origin, action: 'written-back', detail: dryRun ? `would be written back ${written}` : `written back ${written}` });
    if (dryRun) continue;
    const headers: IHeaders = {};
    for (const { name, value } of letter.record.headers) if (!name.startsWith(HEADER_PREFIX)) headers[name] = value;
    headers[REPLAY_OF_HEADER] = `${deadLetterTopic(group)}/${at.partition}/${at.offset}`;
    // Its identity goes with it: `ctx.idempotencyKey` and its completed steps stay those of its first origin.
    headers[FIRST_ORIGIN_HEADER] = formatFirstOrigin(firstOriginOf(letter.record.headers, {
      topic: letter.origin.topic, partition: letter.origin.partition, offset: letter.origin.offset!,
    }));
    await producer!.send({ topic: letter.origin.topic, acks: -1, messages: [{ key: letter.record.key, value: letter.record.value, headers }] });
  }
  return actions;
}

