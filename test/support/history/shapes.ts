/** Random histories (fast-check) and the shapes of the unit tests' and `npm run fuzz:histories`' histories. */

import fc from 'fast-check';
import type { Ordering } from '../../../src/options';
import type { DeliverStep, FailureKind, Fault, HistorySpec, LoseStep, RetryStep, Step } from './spec';

export interface HistoryShape {
  readonly orderings: readonly Ordering[];
  readonly partitions: 1 | 2;
  readonly maxRecords: number;
  readonly maxSteps: number;
  /** The Kafka keys records get (besides null); default `a`, `b`, `c`. One key: long lanes, much parking. */
  readonly keys?: readonly string[];
  /** Histories may hold `lose` steps (Redis losing state): only for a backend with `losses`. */
  readonly losses?: boolean;
  /**
   * Every history opens with the partition's first minute: a delivery, then Redis loses every key or its last
   * writes before any committer run, so no durable marker exists yet (with `losses`).
   */
  readonly firstMinute?: boolean;
  /**
   * With `firstMinute`: before the loss, retry deliveries drain lanes (their copies due, crashes likely), no committer
   * run in between: drained heads in the first minute (issue 39).
   */
  readonly firstDrain?: boolean;
  /** What the first minute's loss takes: every key or the last writes (default), or the lanes hash alone. */
  readonly firstLoss?: 'lanes';
  /** Every history runs under the `hold` dead-letter policy (default: either policy). */
  readonly hold?: boolean;
  /** Every history has a poison key (every record of it fails every attempt): blocked and held lanes are common. */
  readonly poison?: boolean;
}

export const loseArb: fc.Arbitrary<LoseStep> = fc.record({
  t: fc.constant('lose' as const),
  what: fc.constantFrom('writes' as const, 'writes' as const, 'key' as const, 'all' as const),
  back: fc.integer({ min: 1, max: 3 }),
  pick: fc.nat({ max: 1_000 }),
  uncommitted: fc.boolean(),
});

/** Faults of an invocation, weighed against 10 for none (the retry function's crash windows are narrower). */
export function faultArb(crashWeight: number, dieWeight: number, maxEvents: number): fc.Arbitrary<Fault> {
  return fc.oneof(
    { weight: 10, arbitrary: fc.constant<Fault>({ kind: 'none' }) },
    { weight: crashWeight, arbitrary: fc.nat({ max: maxEvents }).map((after): Fault => ({ kind: 'crash', after })) },
    { weight: dieWeight, arbitrary: fc.integer({ min: 1, max: 3 }).map((start): Fault => ({ kind: 'die', start })) },
    { weight: 1, arbitrary: fc.constant<Fault>({ kind: 'cut' }) },
    { weight: 1, arbitrary: fc.record({ start: fc.integer({ min: 1, max: 4 }), stop: fc.boolean() }).map(({ start, stop }): Fault => ({ kind: 'timeout', start, stop })) },
  );
}

export function deliverArb(shape: HistoryShape): fc.Arbitrary<DeliverStep> {
  const partition: fc.Arbitrary<number | 'all'> = shape.partitions === 1 ? fc.constant(0) : fc.constantFrom<number | 'all'>(0, 1, 'all');
  return fc.record({
    t: fc.constant('deliver' as const),
    partition,
    back: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) }),
    size: fc.integer({ min: 1, max: shape.maxRecords }),
    fault: faultArb(4, 2, 14),
  });
}

export const retryArb: fc.Arbitrary<RetryStep> = fc.record({
  t: fc.constant('retry' as const),
  order: fc.constantFrom('asc' as const, 'desc' as const, 'parallel' as const),
  back: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
  size: fc.integer({ min: 1, max: 6 }),
  // 0: copies delayed by the backoff (60 s) or by `later` (5 s) are not due yet; 6 s: only the 5 s ones are.
  advanceMs: fc.constantFrom(0, 6_000, 61_000),
  fault: faultArb(6, 5, 20),
});

/** Random histories of one group; `shape` bounds their size. */
export function historyArb(shape: HistoryShape): fc.Arbitrary<HistorySpec> {
  const names = shape.keys ?? ['a', 'b', 'c'];
  const key = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fc.constant(null) });
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 5, arbitrary: deliverArb(shape) },
    { weight: 4, arbitrary: retryArb },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('both' as const), deliver: deliverArb(shape), retry: retryArb }) },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('commit' as const),
        advanceMs: fc.constantFrom(0, 200_000),
        crashAfter: fc.option(fc.nat({ max: 4 }), { nil: undefined, freq: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('rewind' as const), what: fc.constantFrom('source' as const, 'tiers' as const) }) },
    { weight: 1, arbitrary: fc.constant({ t: 'operator' as const }) },
    ...(shape.losses === true ? [{ weight: 2, arbitrary: loseArb }] : []),
  );
  return fc.record({
    ordering: fc.constantFrom(...shape.orderings),
    nullKey: fc.constantFrom('independent' as const, 'shared' as const),
    deadLetter: shape.hold === true ? fc.constant('hold' as const) : fc.constantFrom('release' as const, 'hold' as const),
    maxAttempts: fc.integer({ min: 1, max: 3 }),
    concurrency: fc.constantFrom(1, 2, 8),
    caps: fc.option(fc.record({ maxWindow: fc.integer({ min: 1, max: 4 }), maxParked: fc.integer({ min: 1, max: 3 }) }), { nil: undefined, freq: 4 }),
    keys: fc.array(fc.array(key, { minLength: 1, maxLength: shape.maxRecords }), { minLength: shape.partitions, maxLength: shape.partitions }),
    poison: shape.poison === true ? fc.constantFrom(...names) : fc.option(fc.constantFrom(...names), { nil: undefined, freq: 4 }),
    badValues: fc.array(fc.record({ p: fc.nat({ max: shape.partitions - 1 }), o: fc.nat({ max: shape.maxRecords - 1 }) }), { maxLength: 2 }),
    failures: fc.array(
      fc.record({
        p: fc.nat({ max: shape.partitions - 1 }),
        o: fc.nat({ max: shape.maxRecords - 1 }),
        attempt: fc.integer({ min: 1, max: 3 }),
        kind: fc.constantFrom<FailureKind>('transient', 'transient', 'soon', 'later', 'fatal', 'bug'),
      }),
      { maxLength: 8 },
    ),
    dupWrites: fc.array(fc.nat({ max: 20 }), { maxLength: 3 }),
    suspend: fc.boolean(),
    steps: shape.firstMinute === true && shape.firstDrain === true
      ? fc.tuple(deliverArb(shape), retryArb, retryArb, fc.constantFrom('all' as const, 'writes' as const), fc.array(step, { minLength: 1, maxLength: shape.maxSteps }))
        .map(([first, drain, again, what, rest]): Step[] => [
          { ...first, quiet: true },
          { ...drain, advanceMs: 61_000, quiet: true },
          { ...again, quiet: true },
          { t: 'lose', what, back: 1, pick: 0, uncommitted: true },
          ...rest,
        ])
      : shape.firstMinute === true
      ? fc.tuple(deliverArb(shape), shape.firstLoss === 'lanes' ? fc.constant('lanes' as const) : fc.constantFrom('all' as const, 'writes' as const), fc.array(step, { minLength: 1, maxLength: shape.maxSteps }))
        .map(([first, what, rest]): Step[] => [first, { t: 'lose', what, back: 1, pick: 0, uncommitted: true }, ...rest])
      : fc.array(step, { minLength: 1, maxLength: shape.maxSteps }),
  });
}

/** The shapes of the unit tests' histories, and of `npm run fuzz:histories`, by name. */
/** Shapes that hold `lose` steps of their own: run on Redis only. */
export const LOSS_SHAPES = {
  'key mode, the first minute': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true },
  'key mode, hold, the first minute': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true, hold: true, poison: true },
  'partition mode, the lanes hash lost in the first minute': { orderings: ['partition'], partitions: 1, maxRecords: 8, maxSteps: 10, losses: true, firstMinute: true, firstLoss: 'lanes', poison: true },
  'key mode, drained heads in the first minute': { orderings: ['key', 'partition'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a', 'b'], losses: true, firstMinute: true, firstDrain: true },
  'key mode, hold, held lanes through recoveries': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 12, keys: ['a', 'b'], losses: true, hold: true, poison: true },
} as const satisfies Record<string, HistoryShape>;

export const HISTORY_SHAPES = {
  'key mode, one partition': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10 },
  'key mode, one hot key': { orderings: ['key'], partitions: 1, maxRecords: 8, maxSteps: 10, keys: ['a'] },
  'key mode, two partitions': { orderings: ['key'], partitions: 2, maxRecords: 6, maxSteps: 10 },
  'partition mode': { orderings: ['partition'], partitions: 2, maxRecords: 6, maxSteps: 10 },
  'unordered mode': { orderings: ['unordered'], partitions: 1, maxRecords: 8, maxSteps: 10 },
} as const satisfies Record<string, HistoryShape>;
