/**
 * What a retry copy does once it has looked at its lane's head: one table of rules read by one function, like the loss
 * judge's (docs/ARCHITECTURE.md, "The path of a retry copy"). The path reads the head (a read before the copy's due
 * time, the claim when due), classifies, and acts; the loss verdict and the partition's marker are read only when a
 * rule reached asks for them (the loss check reports what it finds, the marker costs a round trip).
 */
import type { LaneHead } from '../ports/lane-head';
import type { HandOffItem } from '../ports/handoff';
import { RECOVERY_RECHECK_MS } from '../durability/first-minute';
import type { RetryTask } from './admit';

/**
 * Where the lane's head stands against the copy:
 * - `head`: the copy is its head (claimed when due; before, read `retrying` at the copy's attempt; an unordered copy
 *   has no head to read before its claim);
 * - `twin`: another copy of the same head and attempt holds the claim (written twice after a crash);
 * - `held`: the copy's origin is its lane's head, held by the `hold` policy (the copy is its watch copy);
 * - `free`: the lane is free;
 * - `past`: the head lies past the copy's origin (a release set the origin's done bit, or Redis lost the state that
 *   held the origin and a later record made the lane anew);
 * - `behind`: the head lies below the origin, or at it with an earlier attempt (a head holds the copy's attempt before
 *   the copy is written, and only moves on: the state went back, `HeadBehindOrigin`);
 * - `spent`: the head holds a later attempt of the origin (its copy written, or, after a crash between the head's
 *   advance and that write, only its lease and payload in Redis until the committer re-drives it);
 * - `refused`: an unordered copy's claim found the record terminal, a later attempt run, or a twin run.
 */
export type HeadPlace = 'head' | 'twin' | 'held' | 'free' | 'past' | 'behind' | 'spent' | 'refused';

/** Whether the partition has its durable marker (`durablyMarked`); `unknown`: the store cannot tell. */
export type Marked = 'marked' | 'unmarked' | 'unknown';

/** The facts the rules read. `lost` and `marked` are absent until a rule reached asks for them. */
export interface CopySituation {
  /** When due (the claim), or before (a read: a stale copy is dropped without waiting). */
  readonly due: boolean;
  readonly place: HeadPlace;
  /** When a twin's claim ends (epoch ms). */
  readonly claimedUntilMs?: number;
  /** The loss judge found the partition's state lost (`copyFindsLoss`, which reports it). */
  readonly lost?: boolean;
  readonly marked?: Marked;
}

/** A fact read only when a rule asks for it. */
export type AskedFact = 'lost' | 'marked';

/** What the copy does. */
export type CopyVerdict =
  /** Runs its record when due; before, waits for its due time (its claim decides then). */
  | { readonly do: 'run' }
  /** Not its lane's head: does nothing, counted; its own offset gets done. */
  | { readonly do: 'stale' }
  /** Back to its tier until the twin's claim ends: by then the head moved on, or its claimant died. */
  | { readonly do: 'twin'; readonly untilMs: number }
  /** Watches a held head or its lane in the partition's first minute: back to its tier to look again (`recheckLater`). */
  | { readonly do: 'watch' }
  /** Kept for the recovery of a loss it found: back to its tier to look again (`recheckLater`). */
  | { readonly do: 'keep' }
  /** A held head's watch copy once the partition is marked: a loss is found against the marker now; done. */
  | { readonly do: 'unwatch' };

interface CopyRule {
  readonly why: string;
  /** Whether the rule concerns the copy, read before the fact it asks for. */
  readonly at: (s: CopySituation) => boolean;
  /** The fact it asks for, read once the rule is reached. */
  readonly asks?: AskedFact;
  /** Over the asked fact too; absent: `at` decides. */
  readonly when?: (s: CopySituation) => boolean;
  readonly then: (s: CopySituation) => CopyVerdict;
}

const lostOrMoved = (s: CopySituation): boolean => s.place === 'free' || s.place === 'past' || s.place === 'behind';

/** The rules, first match wins. */
export const COPY_RULES: readonly CopyRule[] = [
  { why: 'the copy is its lane\'s head', at: (s) => s.place === 'head', then: () => ({ do: 'run' }) },
  { why: 'a twin holds the claim: back until it ends', at: (s) => s.place === 'twin', then: (s) => ({ do: 'twin', untilMs: s.claimedUntilMs! }) },
  {
    why: 'a held head\'s watch copy, due, in a marked partition (or one whose store cannot tell): nothing left to watch',
    at: (s) => s.place === 'held' && s.due,
    asks: 'marked',
    when: (s) => s.marked !== 'unmarked',
    then: () => ({ do: 'unwatch' }),
  },
  { why: 'a held head\'s watch copy: waits, or looks again later', at: (s) => s.place === 'held', then: () => ({ do: 'watch' }) },
  {
    why: 'its lane is gone, moved past it or behind it, and the state was lost: kept for the recovery',
    at: lostOrMoved,
    asks: 'lost',
    when: (s) => s.lost === true,
    then: () => ({ do: 'keep' }),
  },
  {
    why: 'its lane moved past it, or a later attempt of its origin heads it, in the partition\'s first minute: records behind that head, or '
      + 'that attempt (its lease and payload until the re-drive writes its copy), may live only in Redis, so it watches the lane',
    at: (s) => s.place === 'past' || s.place === 'spent',
    asks: 'marked',
    when: (s) => s.marked === 'unmarked',
    then: () => ({ do: 'watch' }),
  },
  { why: 'anything else: not its lane\'s head', at: () => true, then: () => ({ do: 'stale' }) },
];

/**
 * Pure: what the copy does (`COPY_RULES`), or the fact the first rule reached asks for and is not given yet.
 *
 * @example
 * classifyCopy({ due: true, place: 'past' }); // { ask: 'lost' }
 * classifyCopy({ due: true, place: 'past', lost: false, marked: 'marked' }); // { do: 'stale' }
 */
export function classifyCopy(situation: CopySituation): CopyVerdict | { readonly ask: AskedFact } {
  for (const rule of COPY_RULES) {
    if (!rule.at(situation)) continue;
    if (rule.asks !== undefined && situation[rule.asks] === undefined) return { ask: rule.asks };
    if (rule.when === undefined || rule.when(situation)) return rule.then(situation);
  }
  throw new Error('no copy rule matched');
}

/**
 * `classifyCopy`, reading each fact a rule asks for through `read` (once, when the rule is reached).
 *
 * @example
 * const verdict = await judgeCopy({ due: true, place }, (fact) => readFact(fact));
 */
export async function judgeCopy(situation: CopySituation, read: (fact: AskedFact) => Promise<boolean | Marked>): Promise<CopyVerdict> {
  let known = situation;
  for (;;) {
    const verdict = classifyCopy(known);
    if (!('ask' in verdict)) return verdict;
    known = { ...known, [verdict.ask]: await read(verdict.ask) };
  }
}

/**
 * Pure: where the lane's head stands against the copy, as read (`head` when it is the copy's own, `retrying`).
 *
 * @example
 * placeOf({ origin: { offset: 7 }, attempt: 2 }, { offset: 9, attempt: 1, state: 'retrying' }); // 'past'
 */
export function placeOf(copy: { readonly origin: { readonly offset: number }; readonly attempt: number }, head: Pick<LaneHead, 'offset' | 'attempt' | 'state'> | undefined): HeadPlace {
  if (head === undefined) return 'free';
  const { offset } = copy.origin;
  if (head.offset === offset && head.attempt === copy.attempt && head.state === 'retrying') return 'head';
  if (head.offset === offset && head.state === 'held') return 'held';
  if (head.offset > offset) return 'past';
  if (head.offset < offset || head.attempt < copy.attempt) return 'behind';
  return 'spent';
}

/**
 * The one due time of a copy written back to look again: `RECOVERY_RECHECK_MS` from now (a kept or watching copy), or
 * when a twin's claim ends (`untilMs`); never before the copy's own due time (G4).
 *
 * @example
 * recheckLater(task, Date.now()); // task.writeBack, due 5 s from now
 */
export function recheckLater(task: Pick<RetryTask, 'dueAtMs' | 'writeBack'>, nowMs: number, untilMs = nowMs + RECOVERY_RECHECK_MS): HandOffItem {
  return { ...task.writeBack!, dueAtMs: Math.max(task.dueAtMs, untilMs) };
}
