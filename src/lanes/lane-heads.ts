import { jsonText } from '../describe';
import { decodeKafkaEvent, type KafkaRecord } from '../event';
import type { Copies, CopyBasis } from '../handoff/copies';
import { needsWatchCopy, RECOVERY_RECHECK_MS } from '../durability/first-minute';
import type { CompletionPort } from '../ports/completion';
import { NotHeadError, StaleAttemptError } from '../ports/errors';
import type { HandOffItem, HandOffOutcome } from '../ports/handoff';
import type { ParkedRecord } from '../ports/lane-head';
import type { PartitionRef } from '../ports/partition';
import type { LanesOptions } from '../options/lanes-options';

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
 * The lane-head moves' scope from a run scope and the function's parts (options, copies): a plain object of what
 * the moves use, made where a path moves a head.
 */
export function headMoves(scope: Omit<LaneHeadScope, 'options' | 'copies'>, parts: Pick<LaneHeadScope, 'options' | 'copies'>): LaneHeadScope {
  return { options: parts.options, copies: parts.copies, store: scope.store, leaseUntilMs: scope.leaseUntilMs, now: scope.now, write: scope.write };
}

/** What the lane-head moves ask of the completion store: a head's move, a lane's release, the first minute. */
export type HeadMoveScope = Omit<LaneHeadScope, 'store'> & { readonly store: Pick<CompletionPort, 'advance' | 'release' | 'durablyMarked'> };

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

/** A lane head whose retry copy is handed off: its lane, the head as Redis keeps it, its copy, and its record. */
export interface HeadCopy {
  readonly lane: string;
  readonly head: { readonly offset: number; readonly attempt: number };
  readonly copy: HandOffItem;
  /** The head's record, for the dead-letter policy when its copy is refused. */
  readonly record: KafkaRecord;
}

/** What becomes of a head whose copy the broker refused for good (`handOffHeads`). */
export type RefusedHeads = 'dead-letter' | 'leave' | ((head: HeadCopy, why: { readonly reason: string }) => Promise<void>);

/** What became of one head: its copy written (`retried`), refused and dead-lettered, or refused and left as it was. */
export type HeadHandedOff = 'retried' | 'dead-lettered' | 'left';

/**
 * The one hand-off of lane heads (the source path, the retry path, the committer's re-drive, a recovery, the operator
 * commands): writes the heads' copies in one call, then takes each written head's lease off (`advance`, due when its
 * copy is). A crash in between leaves the lease to expire and the committer to write the copy again: the head check
 * drops the duplicate. A head that moved meanwhile (its copy ran already) took its lease with it: `NotHeadError` and
 * `StaleAttemptError` are tolerated. A copy the broker refused for good is dead-lettered, and the lane's dead-letter
 * policy applied (`refused: 'dead-letter'`), or left with its lease for the re-drive (`refused: 'leave'`), or settled
 * the caller's way (a function: the retry path drains a released lane itself; its errors are its own).
 */
export async function handOffHeads(scope: HeadMoveScope, ref: PartitionRef, heads: readonly HeadCopy[], refused: RefusedHeads = 'dead-letter'): Promise<HeadHandedOff[]> {
  if (heads.length === 0) return [];
  const outcomes = await scope.write(heads.map((one) => one.copy));
  return Promise.all(heads.map(async (one, i): Promise<HeadHandedOff> => {
    const { lane, head, copy } = one;
    const outcome = outcomes[i];
    if (outcome?.status === 'refused' && refused === 'leave') return 'left';
    if (outcome?.status === 'refused' && typeof refused === 'function') {
      await refused(one, outcome);
      return 'dead-lettered';
    }
    try {
      if (outcome?.status === 'refused') {
        await applyDeadLetterPolicy(scope, ref, one, outcome);
        return 'dead-lettered';
      }
      await scope.store.advance(ref, lane, head, { attempt: head.attempt, state: 'retrying', dueAtMs: copy.dueAtMs, leaseUntilMs: 0 });
    } catch (error) {
      // The head moved meanwhile (its copy ran already): the lease went with it.
      if (!(error instanceof NotHeadError || error instanceof StaleAttemptError)) throw error;
    }
    return 'retried';
  }));
}

/**
 * A lane was released onto `next` (its lease set): its retry copy goes to the first tier, due now (deferred: the
 * attempt is unchanged, 1 unless `next.attempt` says), and its lease comes off (`handOffHeads`).
 */
export async function handOffNewHead(scope: HeadMoveScope, ref: PartitionRef, lane: string, next: ParkedRecord & { readonly attempt?: number }): Promise<'retried' | 'dead-lettered'> {
  const record = decodeParked(next.payload);
  const attempt = next.attempt ?? 1;
  const copy = scope.copies.deferred({ record, origin: { topic: ref.topic, partition: ref.partition, offset: next.offset }, lane }, attempt);
  const [outcome] = await handOffHeads(scope, ref, [{ lane, head: { offset: next.offset, attempt }, copy, record }]);
  return outcome === 'dead-lettered' ? 'dead-lettered' : 'retried';
}

/** A lane head that was dead-lettered: its lane, the head as Redis keeps it, and its record (for its watch copy). */
export interface DeadHead {
  readonly lane: string;
  readonly head: { readonly offset: number; readonly attempt: number };
  readonly record?: KafkaRecord | undefined;
}

/**
 * A blocked lane's head was dead-lettered (attempts exhausted, non-retriable, or its copy refused for good):
 * under `release` the lane moves on (its next parked record is handed to the first tier, due now), under
 * `hold` it stays blocked on the head, held, until an operator releases or replays it.
 */
export async function applyDeadLetterPolicy(scope: HeadMoveScope, ref: PartitionRef, { lane, head, record }: DeadHead, why: { readonly reason: string }): Promise<void> {
  if (scope.options.deadLetter.policy === 'hold') {
    await scope.store.advance(ref, lane, head, { attempt: head.attempt, state: 'held', dueAtMs: scope.now(), leaseUntilMs: 0, reason: why.reason });
    if (record !== undefined) await watchHeldHead(scope, ref, { record, origin: { topic: ref.topic, partition: ref.partition, offset: head.offset }, lane }, head.attempt);
    return;
  }
  const next = await scope.store.release(ref, { lane, headOffset: head.offset, nowMs: scope.now(), leaseUntilMs: scope.leaseUntilMs });
  if (next !== undefined) await handOffNewHead(scope, ref, lane, next);
}

/**
 * The first minute of a held lane (docs/durability.md, "Held and drained lanes in the first minute"). A lane the `hold` policy holds has no retry copy: its head
 * is in the dead-letter topic, its followers live only in Redis. Once the completion group holds the partition's
 * marker a loss of that state is found against it; before that (until the committer's first commit of the partition
 * landed) nothing durable would tell, so the held head gets a **watch copy**: a deferred copy of the head in the retry
 * path, due after `RECOVERY_RECHECK_MS`, that never runs the record while the lane is held. The retry path writes it
 * back while the lane stays held and the partition unmarked, drops it once marked, and when it finds the lane gone it
 * reports the loss like any retry copy (`retry/kept-for-recovery.ts`), so the committer recovers the partition from the head
 * on. Costs one copy per held lane per half minute, in the first minute only; nothing on the admission path.
 */
export async function watchHeldHead(scope: HeadMoveScope, ref: PartitionRef, basis: CopyBasis, attempt: number): Promise<void> {
  const watches = await watchCopies(scope, ref, [{ basis, attempt }]);
  if (watches.length > 0) await scope.write(watches);
}

/**
 * The watch copies of held heads (`watchHeldHead`), the one place they are built: deferred copies due
 * `RECOVERY_RECHECK_MS` after `nowMs` while the partition needs them (`needsWatchCopy`), none once it is marked.
 */
export async function watchCopies(
  scope: Pick<HeadMoveScope, 'store' | 'copies' | 'now'>,
  ref: PartitionRef,
  heads: ReadonlyArray<{ readonly basis: CopyBasis; readonly attempt: number }>,
  nowMs = scope.now(),
): Promise<HandOffItem[]> {
  if (heads.length === 0 || !(await needsWatchCopy(scope.store, ref))) return [];
  return heads.map(({ basis, attempt }) => scope.copies.deferred(basis, attempt, nowMs + RECOVERY_RECHECK_MS));
}
