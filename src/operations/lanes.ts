import type { CompletionStore } from '../completion/store';
import type { PartitionRef } from '../ports/partition';
import { LanesError } from '../errors';
import { handOffNewHead, type LaneHeadScope } from '../lanes/lane-heads';
import type { CompletionPort } from '../ports/completion';
import type { HandOffSink } from '../ports/handoff';
import { copiesFor } from '../handoff/copies';
import type { LanesOptions } from '../options/lanes-options';

/**
 * The operator commands on a lane (`kafka-lanes lane release`), and what every operator command is given: the
 * group's options, its completion store and a hand-off writer. The dead-letter commands are in `dead-letters.ts`.
 */

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

/** The lane-head scope of an operator command: its lease on a head lasts `OPERATOR_LEASE_MS`. */
export function scopeOf(parts: LaneOperatorParts): LaneHeadScope {
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
  const next = await parts.store.release(ref, { lane, headOffset: head.offset, nowMs: scope.now(), leaseUntilMs: scope.leaseUntilMs });
  if (next !== undefined) await handOffNewHead(scope, ref, lane, next);
  return { skipped: head.offset, next: next?.offset };
}

