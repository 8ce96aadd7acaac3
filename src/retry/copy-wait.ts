/**
 * What a retry copy that is its lane's head, and not due yet, does in the invocation that holds it: one table of
 * rules read by one function (docs/ARCHITECTURE.md, "The suspend loop"). The copy's head check comes first (a stale
 * copy is dropped without waiting); whatever the rule, it never runs before its due time (G4).
 */
import type { CopyWait } from '../engine/run-scope';

/**
 * A copy due this soon waits in the invocation even in a round of a durable execution. A durable wait lasts whole
 * seconds (at least one), so a suspension would leave such a copy up to a second late; waiting here bills at most
 * this long. The wait decision after a round (`waitAfter`) picks the whole seconds that end within this much before
 * the copy it wakes for is due, or less than a second minus this much after: a copy bills at most 250 ms of waiting per
 * retry, or runs less than 750 ms late (plus the time the execution takes to resume), never both.
 */
export const WAIT_HERE_MS = 250;

/** What a copy not due yet does now. */
export type CopyWaitAction =
  /** Waits in this invocation, up to its stop time; still not due then, it goes back to its tier unchanged. */
  | { readonly action: 'wait-here' }
  /** Left for a later round of the execution, looked at again at `wakeAtMs`: neither done nor written back. */
  | { readonly action: 'suspend'; readonly wakeAtMs: number }
  /** Back to its tier unchanged, now. */
  | { readonly action: 'write-back' };

/** The facts the rules read. */
export interface CopyWaitFacts {
  readonly copyWait: CopyWait;
  /** The copy's due time (epoch ms), after now. */
  readonly dueAtMs: number;
  readonly nowMs: number;
}

interface Rule {
  readonly why: string;
  readonly when: (facts: CopyWaitFacts) => boolean;
  readonly then: (facts: CopyWaitFacts) => CopyWaitAction;
}

const untilOf = (facts: CopyWaitFacts): number => (facts.copyWait.kind === 'suspend' ? facts.copyWait.untilMs : facts.nowMs);

/** The rules, first match wins. */
export const COPY_WAIT_RULES: readonly Rule[] = [
  {
    why: 'a plain invocation waits for its copies itself (the retry function without durable execution)',
    when: (f) => f.copyWait.kind === 'inline',
    then: () => ({ action: 'wait-here' }),
  },
  {
    why: 'due within the rounding of a durable wait: waiting here bills less than a suspension would make it late',
    when: (f) => f.dueAtMs - f.nowMs <= WAIT_HERE_MS,
    then: () => ({ action: 'wait-here' }),
  },
  {
    why: 'due within what the execution may wait: suspended until due',
    when: (f) => f.dueAtMs <= untilOf(f),
    then: (f) => ({ action: 'suspend', wakeAtMs: f.dueAtMs }),
  },
  {
    why: 'due after it: suspended until the execution may wait no longer, then back to its tier (one bounce per execution)',
    when: (f) => f.nowMs + WAIT_HERE_MS < untilOf(f),
    then: (f) => ({ action: 'suspend', wakeAtMs: untilOf(f) }),
  },
  {
    why: 'the execution may wait no longer: back to its tier unchanged',
    when: () => true,
    then: () => ({ action: 'write-back' }),
  },
];

/**
 * What a copy not due yet does now (`COPY_WAIT_RULES`). Pure.
 *
 * @example
 * copyWaitAction({ copyWait: { kind: 'suspend', untilMs: t + 600_000 }, dueAtMs: t + 60_000, nowMs: t }); // { action: 'suspend', wakeAtMs: t + 60_000 }
 */
export function copyWaitAction(facts: CopyWaitFacts): CopyWaitAction {
  return COPY_WAIT_RULES.find((rule) => rule.when(facts))!.then(facts);
}
