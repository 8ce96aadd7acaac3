import type { LaneHead } from '../ports/lane-head';
import { UnexpectedReplyError } from './errors';

/**
 * A `:lanes` entry read whole: `headOffset|attempt|state|sinceMs|dueAtMs|reason[|leaseUntilMs[|claimCopy|claimUntilMs]]`,
 * the format scripts/lib/lanes-entry.lua writes (a reason never holds a `|`, see `laneReason`; an empty or absent
 * optional field is none).
 */
export interface LanesEntry {
  readonly offset: number;
  readonly attempt: number;
  readonly state: 'retrying' | 'held';
  /** When the lane was blocked (epoch ms). */
  readonly sinceMs: number;
  readonly dueAtMs: number;
  readonly reason: string;
  /** 0: no lease. */
  readonly leaseUntilMs: number;
  /** The retry copy running the head now (`topic:partition:offset`), '' for none. */
  readonly claimCopy: string;
  /** 0: no claim. */
  readonly claimUntilMs: number;
}

/**
 * Reads a `:lanes` entry.
 *
 * @throws UnexpectedReplyError when it lacks a head offset or attempt, or its state is not `retrying` or `held`.
 * @example
 * parseLanesEntry('12|2|retrying|1700000000000|1700000005000|', 'lane 1:a').dueAtMs; // 1700000005000
 */
export function parseLanesEntry(entry: string, where: string): LanesEntry {
  const [offset, attempt, state, since, dueAt, reason, lease, claimCopy, claimUntil] = entry.split('|');
  if (offset === undefined || attempt === undefined || (state !== 'retrying' && state !== 'held')) {
    throw new UnexpectedReplyError(`${where}: malformed lane head \`${entry}\``);
  }
  return {
    offset: Number(offset),
    attempt: Number(attempt),
    state,
    sinceMs: Number(since ?? 0),
    dueAtMs: Number(dueAt ?? 0),
    reason: reason ?? '',
    leaseUntilMs: Number(lease ?? 0),
    claimCopy: claimCopy ?? '',
    claimUntilMs: Number(claimUntil ?? 0),
  };
}

/**
 * The head offset of a `:lanes` entry alone, as `entryHead` of scripts/lib/lanes-entry.lua reads it: a first field
 * of digits, or `undefined` for an entry of another shape.
 *
 * @example
 * entryHeadOffset('12|2|retrying|1700000000000|1700000005000|'); // 12
 */
export function entryHeadOffset(entry: string): number | undefined {
  const head = /^(\d+)\|/.exec(entry)?.[1];
  return head === undefined ? undefined : Number(head);
}

/**
 * A `:lanes` entry as the lane's head (the claim left out: only `claim-1.lua` reads it). The lane id is not in the
 * entry (it is the hash field); it is left empty unless given.
 */
export function parseLaneHead(entry: string, where: string, lane = ''): LaneHead {
  const { offset, attempt, state, dueAtMs, reason, leaseUntilMs } = parseLanesEntry(entry, where);
  return { lane, offset, attempt, state, dueAtMs, reason, leaseUntilMs };
}
