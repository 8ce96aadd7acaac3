import type { ParkedRecord } from '../ports/lane-head';
import { jsonText } from '../describe';
import type { PartitionRef } from '../ports/partition';
import { decodeKafkaEvent, type KafkaRecord } from '../event';
import type { Copies, CopyBasis } from '../handoff/copies';
import { RECOVERY_RECHECK_MS } from '../completion/loss-suspect';
import type { HandOffItem, HandOffOutcome } from '../ports/handoff';
import type { LanesOptions } from '../options/lanes-options';
import type { CompletionPort } from '../ports/completion';

/**
 * What moves a lane head through the retry path outside a handler run: the source path, the retry path,
 * the committer's re-drive and the operator commands all hand a new head off the same way.
 */
export interface LaneHeadScope {
  readonly options: LanesOptions;
  readonly store: CompletionPort;
  /** The lease a new head gets on release, until its copy is written (epoch ms). */
  readonly leaseUntilMs: number;
  /** Builds the copies it writes. */
  readonly copies: Copies;
  now(): number;
  write(items: readonly HandOffItem[]): Promise<readonly HandOffOutcome[]>;
}

/**
 * The reason a retrying head carries in its `:lanes` entry when it was blocked at the deadline without
 * running: a redelivery that hands it off again writes it as deferred too (attempt unchanged, counted as
 * deferred), not as a failed attempt.
 */
export const DEFERRED_HEAD = 'deferred';

/** What a park list keeps of a record: the record exactly as AWS sent it, so it decodes like a fresh one. */
export function parkPayload(record: KafkaRecord): string {
  return jsonText(record.raw);
}

/**
 * A parked record back as a decoded record; throws when the payload is not one (a corrupted park list).
 *
 * @example
 * const record = decodeParked(next.payload); // the record as first delivered (or the retry copy kept for it)
 */
export function decodeParked(payload: string): KafkaRecord {
  const raw = JSON.parse(payload) as { topic?: unknown; partition?: unknown };
  const key = `${String(raw.topic)}-${String(raw.partition)}`;
  const decoded = decodeKafkaEvent({ eventSource: 'SelfManagedKafka', records: { [key]: [raw] } });
  const batch = decoded.partitions[0];
  const record = batch?.records[0];
  if (record === undefined) throw new SyntaxError(`a parked payload does not decode: ${batch?.failures[0]?.message ?? 'no record'}`);
  return record;
}

/**
 * A lane was released onto `next` (its lease set): write `next`'s retry copy to the first tier, due now
 * (deferred: the attempt is unchanged), then take the lease off. A crash between the two leaves the lease
 * to expire and the committer to write the copy again: the head check drops the duplicate. A copy the
 * broker refuses for good is dead-lettered and the dead-letter policy applies to the lane again.
 */
export async function handOffNewHead(scope: LaneHeadScope, ref: PartitionRef, lane: string, next: ParkedRecord, attempt = 1): Promise<'retried' | 'dead-lettered'> {
  const record = decodeParked(next.payload);
  const origin = { topic: ref.topic, partition: ref.partition, offset: next.offset };
  const copy = scope.copies.deferred({ record, origin, lane }, attempt);
  const [outcome] = await scope.write([copy]);
  if (outcome?.status === 'refused') {
    await applyDeadLetterPolicy(scope, ref, lane, { offset: next.offset, attempt }, outcome, record);
    return 'dead-lettered';
  }
  await scope.store.advance(ref, lane, { offset: next.offset, attempt }, { attempt, state: 'retrying', dueAtMs: copy.dueAtMs, leaseUntilMs: 0 });
  return 'retried';
}

/**
 * A blocked lane's head was dead-lettered (attempts exhausted, non-retriable, or its copy refused for good):
 * under `release` the lane moves on (its next parked record is handed to the first tier, due now), under
 * `hold` it stays blocked on the head, held, until an operator releases or replays it.
 */
export async function applyDeadLetterPolicy(
  scope: LaneHeadScope,
  ref: PartitionRef,
  lane: string,
  head: { offset: number; attempt: number },
  why: { readonly reason: string },
  record?: KafkaRecord,
): Promise<void> {
  if (scope.options.deadLetter.policy === 'hold') {
    await scope.store.advance(ref, lane, head, { attempt: head.attempt, state: 'held', dueAtMs: scope.now(), leaseUntilMs: 0, reason: why.reason });
    if (record !== undefined) await watchHeldHead(scope, ref, { record, origin: { topic: ref.topic, partition: ref.partition, offset: head.offset }, lane }, head.attempt);
    return;
  }
  const next = await scope.store.release(ref, lane, head.offset, 1, scope.now(), scope.leaseUntilMs);
  if (next !== undefined) await handOffNewHead(scope, ref, lane, next);
}

/**
 * The first minute of a held lane (README, "Durability"). A lane the `hold` policy holds has no retry copy: its head
 * is in the dead-letter topic, its followers live only in Redis. Once the completion group holds the partition's
 * marker a loss of that state is found against it; before that (until the committer's first commit of the partition
 * landed) nothing durable would tell, so the held head gets a **watch copy**: a deferred copy of the head in the retry
 * path, due after `RECOVERY_RECHECK_MS`, that never runs the record while the lane is held. The retry path writes it
 * back while the lane stays held and the partition unmarked, drops it once marked, and when it finds the lane gone it
 * reports the loss like any retry copy (`retry/kept-for-recovery.ts`), so the committer recovers the partition from the head
 * on. Costs one copy per held lane per half minute, in the first minute only; nothing on the admission path.
 */
export async function watchHeldHead(scope: LaneHeadScope, ref: PartitionRef, basis: CopyBasis, attempt: number): Promise<void> {
  if (scope.store.durablyMarked === undefined || (await scope.store.durablyMarked(ref))) return;
  await scope.write([scope.copies.deferred(basis, attempt, scope.now() + RECOVERY_RECHECK_MS)]);
}
