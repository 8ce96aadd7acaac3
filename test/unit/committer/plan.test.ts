import fc from 'fast-check';
import { parseCommittedOffset, planCommit } from '../../../src/committer/plan';
import { PlanReasonCode, type CommittedOffset, type FrontierInput, type PreviousReading } from '../../../src/committer/types';

const T = 'orders';
const NOW = 1_000_000;

/** A frontier input: window [base, highest] with the given frontier. */
function reading(partition: number, frontier: number, highest = frontier + 10, topic = T): FrontierInput {
  return { topic, partition, reading: { base: Math.min(frontier, 0), highest, frontier } };
}
const committed = (partition: number, offset: number | undefined, topic = T): CommittedOffset => ({ topic, partition, offset });
const previous = (partition: number, frontier: number, highest: number, sinceMs: number): PreviousReading => ({
  topic: T,
  partition,
  frontier,
  highest,
  sinceMs,
});

describe('planCommit', () => {
  describe('moves', () => {
    it('moves a partition whose frontier is ahead of the committed offset', () => {
      // Prepare / Act
      const plan = planCommit({ frontiers: [reading(0, 42)], committed: [committed(0, 40)], nowMs: NOW });
      // Assess
      expect(plan.moves).toEqual([{ topic: T, partition: 0, from: 40, to: 42 }]);
      expect(plan.partitions[0]).toMatchObject({ committedBefore: 40, frontier: 42, committedAfter: 42 });
      expect(plan.reasons).toEqual([]);
    });

    it.each([
      ['absent', []],
      ['-1 (Kafka: none)', [committed(0, -1)]],
      ['undefined', [committed(0, undefined)]],
    ])('moves a partition with nothing committed (%s), even to offset 0', (_, given) => {
      const plan = planCommit({ frontiers: [reading(0, 0, 5)], committed: given, nowMs: NOW });
      expect(plan.moves).toEqual([{ topic: T, partition: 0, from: undefined, to: 0 }]);
      expect(plan.partitions[0]).toMatchObject({ committedBefore: undefined, committedAfter: 0 });
    });

    it('does not move a partition already at its frontier, and says so', () => {
      const plan = planCommit({ frontiers: [reading(0, 42)], committed: [committed(0, 42)], nowMs: NOW });
      expect(plan.moves).toEqual([]);
      expect(plan.reasons).toEqual([expect.objectContaining({ partition: 0, code: PlanReasonCode.UpToDate })]);
    });

    it('never moves a partition backwards when the frontier is below the committed offset', () => {
      const plan = planCommit({ frontiers: [reading(0, 10)], committed: [committed(0, 500)], nowMs: NOW });
      expect(plan.moves).toEqual([]);
      expect(plan.partitions[0]).toMatchObject({ committedBefore: 500, frontier: 10, committedAfter: 500 });
      expect(plan.reasons).toEqual([
        expect.objectContaining({ code: PlanReasonCode.BehindCommitted, detail: expect.stringContaining('500') }),
      ]);
    });

    it('plans nothing for a partition without a frontier and keeps what Kafka has', () => {
      const plan = planCommit({
        frontiers: [{ topic: T, partition: 3, reading: undefined }],
        committed: [committed(3, 7)],
        nowMs: NOW,
      });
      expect(plan.moves).toEqual([]);
      expect(plan.partitions).toEqual([
        expect.objectContaining({ partition: 3, committedBefore: 7, frontier: undefined, committedAfter: 7, stalled: false }),
      ]);
      expect(plan.reasons).toEqual([expect.objectContaining({ code: PlanReasonCode.NothingAdmitted })]);
      expect(plan.next).toEqual([]);
    });

    it('plans every partition on its own, across topics, in input order', () => {
      const plan = planCommit({
        frontiers: [reading(1, 5, 10, 'b'), reading(0, 9, 9, 'a'), reading(0, 3, 3, 'b')],
        committed: [committed(0, 9, 'a'), committed(1, 2, 'b'), committed(0, 1, 'b'), committed(7, 100, 'z')],
        nowMs: NOW,
      });
      expect(plan.moves).toEqual([
        { topic: 'b', partition: 1, from: 2, to: 5 },
        { topic: 'b', partition: 0, from: 1, to: 3 },
      ]);
      expect(plan.partitions.map((p) => `${p.topic}-${p.partition}`)).toEqual(['b-1', 'a-0', 'b-0']);
    });

    it('ignores committed offsets of partitions it was given no frontier for', () => {
      const plan = planCommit({ frontiers: [], committed: [committed(0, 5)], nowMs: NOW });
      expect(plan).toEqual({ moves: [], partitions: [], reasons: [], next: [] });
    });

    it('commits highest + 1 when everything delivered is done', () => {
      const plan = planCommit({ frontiers: [reading(0, 100, 99)], committed: [committed(0, 50)], nowMs: NOW });
      expect(plan.moves).toEqual([{ topic: T, partition: 0, from: 50, to: 100 }]);
    });
  });

  describe('stalls', () => {
    it('finds a stall: frontier unchanged since the previous run while records above it were delivered', () => {
      const plan = planCommit({
        frontiers: [reading(0, 42, 90)],
        committed: [committed(0, 42)],
        previous: [previous(0, 42, 60, NOW - 120_000)],
        nowMs: NOW,
      });
      expect(plan.partitions[0]).toMatchObject({ stalled: true, frontierSinceMs: NOW - 120_000 });
      expect(plan.reasons).toContainEqual(
        expect.objectContaining({ code: PlanReasonCode.Stalled, detail: expect.stringContaining('120000 ms') }),
      );
      expect(plan.next).toEqual([{ topic: T, partition: 0, frontier: 42, highest: 90, sinceMs: NOW - 120_000 }]);
    });

    it('is not a stall when the frontier moved', () => {
      const plan = planCommit({
        frontiers: [reading(0, 43, 90)],
        committed: [committed(0, 42)],
        previous: [previous(0, 42, 90, NOW - 120_000)],
        nowMs: NOW,
      });
      expect(plan.partitions[0]).toMatchObject({ stalled: false, frontierSinceMs: NOW });
      expect(plan.next[0]?.sinceMs).toBe(NOW);
    });

    it.each([
      ['nothing above the frontier was delivered (its record is simply in flight)', 42],
      ['everything delivered is done', 41],
    ])('is not a stall when %s', (_, highest) => {
      const plan = planCommit({
        frontiers: [reading(0, 42, highest)],
        committed: [committed(0, 42)],
        previous: [previous(0, 42, highest, NOW - 1)],
        nowMs: NOW,
      });
      expect(plan.partitions[0]?.stalled).toBe(false);
      expect(plan.reasons.map((r) => r.code)).toEqual([PlanReasonCode.UpToDate]);
    });

    it('cannot tell a stall on the first run (no previous reading)', () => {
      const plan = planCommit({ frontiers: [reading(0, 42, 90)], committed: [committed(0, 42)], nowMs: NOW });
      expect(plan.partitions[0]).toMatchObject({ stalled: false, frontierSinceMs: NOW });
    });

    it('reports a stall even where the frontier is behind the committed offset', () => {
      const plan = planCommit({
        frontiers: [reading(0, 5, 9)],
        committed: [committed(0, 7)],
        previous: [previous(0, 5, 9, NOW - 10)],
        nowMs: NOW,
      });
      expect(plan.reasons.map((r) => r.code)).toEqual([PlanReasonCode.BehindCommitted, PlanReasonCode.Stalled]);
    });

    it('restarts the clock when the frontier went down (Redis lost the partition)', () => {
      const plan = planCommit({
        frontiers: [reading(0, 3, 9)],
        committed: [],
        previous: [previous(0, 50, 60, NOW - 10)],
        nowMs: NOW,
      });
      expect(plan.partitions[0]).toMatchObject({ stalled: false, frontierSinceMs: NOW });
    });
  });

  describe('input checks (programming errors, never retried)', () => {
    it.each([
      ['a negative frontier', [reading(0, -1, 5)]],
      ['a fractional frontier', [reading(0, 1.5, 5)]],
      ['highest below frontier - 1', [reading(0, 10, 8)]],
      ['a partition twice', [reading(0, 1), reading(0, 2)]],
    ])('rejects %s', (_, frontiers) => {
      expect(() => planCommit({ frontiers, committed: [], nowMs: NOW })).toThrow(RangeError);
    });

    it('rejects two committed offsets for one partition and a non-integer committed offset', () => {
      expect(() => planCommit({ frontiers: [], committed: [committed(0, 1), committed(0, 2)], nowMs: NOW })).toThrow(
        /one committed offset per partition/,
      );
      expect(() => planCommit({ frontiers: [reading(0, 1)], committed: [committed(0, Number.NaN)], nowMs: NOW })).toThrow(
        /`NaN`|null/,
      );
    });

    it('rejects a clock that is not an integer', () => {
      expect(() => planCommit({ frontiers: [], committed: [], nowMs: Number.NaN })).toThrow(/`nowMs`/);
    });

    it('says what was expected and what was given', () => {
      expect(() => planCommit({ frontiers: [reading(0, -3, 5)], committed: [], nowMs: NOW })).toThrow(
        'Expected `frontier` of orders-0 to be a non-negative integer, got `-3` (number)',
      );
    });
  });

  describe('properties', () => {
    const partitionCase = fc.record({
      committed: fc.option(fc.integer({ min: -1, max: 1_000 }), { nil: undefined }),
      frontier: fc.option(fc.integer({ min: 0, max: 1_000 }), { nil: undefined }),
      above: fc.integer({ min: -1, max: 50 }),
      previousFrontier: fc.option(fc.integer({ min: 0, max: 1_000 }), { nil: undefined }),
    });

    it('never plans a move backwards or in place, and applying it yields max(committed, frontier)', () => {
      fc.assert(
        fc.property(fc.array(partitionCase, { maxLength: 20 }), (cases) => {
          // Prepare
          const frontiers: FrontierInput[] = cases.map((c, partition) => ({
            topic: T,
            partition,
            reading: c.frontier === undefined ? undefined : { base: 0, frontier: c.frontier, highest: c.frontier + c.above },
          }));
          const given = cases.map((c, partition) => committed(partition, c.committed));
          const before = new Map(cases.map((c, p) => [p, c.committed === undefined || c.committed < 0 ? undefined : c.committed]));
          // Act
          const plan = planCommit({ frontiers, committed: given, nowMs: NOW });
          // Assess: every move goes forward from what Kafka has
          const applied = new Map(before);
          for (const move of plan.moves) {
            expect(move.from).toBe(before.get(move.partition));
            if (move.from !== undefined) expect(move.to).toBeGreaterThan(move.from);
            applied.set(move.partition, move.to);
          }
          expect(new Set(plan.moves.map((m) => m.partition)).size).toBe(plan.moves.length);
          cases.forEach((c, p) => {
            const b = before.get(p);
            const want = c.frontier === undefined ? b : b === undefined ? c.frontier : Math.max(b, c.frontier);
            expect(applied.get(p)).toBe(want);
            expect(plan.partitions[p]?.committedAfter).toBe(want);
          });
        }),
      );
    });

    it('finds a stall exactly when the frontier is unchanged and records above it were delivered', () => {
      fc.assert(
        fc.property(fc.array(partitionCase, { maxLength: 20 }), (cases) => {
          const frontiers: FrontierInput[] = cases.map((c, partition) => ({
            topic: T,
            partition,
            reading: c.frontier === undefined ? undefined : { base: 0, frontier: c.frontier, highest: c.frontier + c.above },
          }));
          const prev = cases.flatMap((c, partition) =>
            c.previousFrontier === undefined ? [] : [previous(partition, c.previousFrontier, c.previousFrontier, 5)],
          );
          const plan = planCommit({ frontiers, committed: [], previous: prev, nowMs: NOW });
          cases.forEach((c, p) => {
            const want = c.frontier !== undefined && c.previousFrontier === c.frontier && c.above > 0;
            expect(plan.partitions[p]?.stalled).toBe(want);
          });
          expect(plan.reasons.filter((r) => r.code === PlanReasonCode.Stalled)).toHaveLength(
            plan.partitions.filter((p) => p.stalled).length,
          );
        }),
      );
    });
  });
});

describe('parseCommittedOffset', () => {
  const where = { topic: T, partition: 0 };

  it.each([
    ['42', 42],
    ['0', 0],
    ['-1', undefined],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('reads %p as %p', (raw, want) => {
    expect(parseCommittedOffset(raw, where)).toBe(want);
  });

  it.each(['', 'abc', '1.5', '9007199254740993'])('rejects %p', (raw) => {
    expect(() => parseCommittedOffset(raw, where)).toThrow(RangeError);
  });
});
