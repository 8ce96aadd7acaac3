import fc from 'fast-check';
import { backoffDelay } from '../../../src/options';
import { exponentialDelay } from '../../../src/options/backoff';
import type { Backoff } from '../../../src/options';

type Exponential = Extract<Backoff, { type: 'exponential' }>;

const exponential = (overrides: Partial<Exponential> = {}): Exponential => ({
  type: 'exponential',
  initialDelayMs: 1_000,
  multiplier: 2,
  maxDelayMs: 600_000,
  jitter: 'none',
  ...overrides,
});

const always = (value: number) => (): number => value;

describe('backoffDelay', () => {
  describe('tiers', () => {
    const tiers: Backoff = { type: 'tiers', delaysMs: [5_000, 60_000, 600_000], maxDelayMs: 600_000 };

    it.each([
      [1, 5_000],
      [2, 60_000],
      [3, 600_000],
      [4, 600_000],
      [1_000, 600_000],
    ])('waits the n-th tier after failed attempt %p (%p ms), the last tier repeating', (attempt, expected) => {
      // Act
      const delay = backoffDelay(tiers, attempt, always(0.99));

      // Assess
      expect(delay).toBe(expected);
    });

    it('with one tier waits that tier every time', () => {
      expect([1, 2, 3].map((attempt) => backoffDelay({ type: 'tiers', delaysMs: [250], maxDelayMs: 250 }, attempt))).toEqual([250, 250, 250]);
    });
  });

  describe('fixed', () => {
    it.each([[1], [2], [10], [1_000]])('waits delayMs after failed attempt %p, whatever random says', (attempt) => {
      // Prepare
      const backoff: Backoff = { type: 'fixed', delayMs: 5_000 };

      // Act
      const delay = backoffDelay(backoff, attempt, always(0.99));

      // Assess
      expect(delay).toBe(5_000);
    });
  });

  describe('exponential without jitter', () => {
    it.each([
      [1, 1_000],
      [2, 2_000],
      [3, 4_000],
      [4, 8_000],
      [10, 512_000],
      [11, 600_000],
      [100, 600_000],
      [2_000, 600_000],
    ])('after failed attempt %p waits %p ms (doubling from 1 s, capped at 10 min)', (attempt, expected) => {
      // Act
      const delay = backoffDelay(exponential(), attempt);

      // Assess
      expect(delay).toBe(expected);
    });

    it('rounds a fractional delay to whole ms', () => {
      // Prepare
      const backoff = exponential({ initialDelayMs: 1_000, multiplier: 1.3 });

      // Act
      const delays = [1, 2, 3, 4].map((attempt) => backoffDelay(backoff, attempt));

      // Assess
      expect(delays).toEqual([1_000, 1_300, 1_690, 2_197]);
    });

    it('stays constant with multiplier 1 and stays 0 from an initial delay of 0', () => {
      // Act
      const constant = [1, 5, 50].map((attempt) => backoffDelay(exponential({ multiplier: 1 }), attempt));
      const zero = [1, 5, 5_000].map((attempt) => backoffDelay(exponential({ initialDelayMs: 0 }), attempt));

      // Assess
      expect(constant).toEqual([1_000, 1_000, 1_000]);
      expect(zero).toEqual([0, 0, 0]);
    });

    it('is capped by a maxDelayMs below the initial delay', () => {
      // Act
      const delay = backoffDelay(exponential({ initialDelayMs: 5_000, maxDelayMs: 2_000 }), 1);

      // Assess
      expect(delay).toBe(2_000);
    });
  });

  describe.each([
    ['full', [0, 0.25, 0.5, 0.999999], [0, 1_000, 2_000, 4_000]],
    ['equal', [0, 0.25, 0.5, 0.999999], [2_000, 2_500, 3_000, 4_000]],
  ] as const)('exponential with %s jitter', (jitter, randoms, expected) => {
    it('spreads the delay of failed attempt 3 (4 s) by random()', () => {
      // Act
      const delays = randoms.map((random) => backoffDelay(exponential({ jitter }), 3, always(random)));

      // Assess
      expect(delays).toEqual(expected);
    });

    it.each([[1], [1.5], [-0.5], [Number.NaN]])('stays within the delay when random() returns %p', (random) => {
      // Act
      const delay = backoffDelay(exponential({ jitter }), 3, always(random));

      // Assess
      expect(delay).toBeGreaterThanOrEqual(jitter === 'full' ? 0 : 2_000);
      expect(delay).toBeLessThanOrEqual(4_000);
    });
  });

  it.each([[0], [-1], [1.5], [Number.NaN], [Number.POSITIVE_INFINITY]])('throws a RangeError for failed attempt %p', (attempt) => {
    // Act
    const act = (): number => backoffDelay(exponential(), attempt);

    // Assess
    expect(act).toThrow(RangeError);
    expect(act).toThrow('Expected `failedAttempt` to be a positive integer');
  });

  describe('properties', () => {
    const backoffs: fc.Arbitrary<Backoff> = fc.oneof(
      fc.record({ type: fc.constant('fixed' as const), delayMs: fc.integer({ min: 0, max: 86_400_000 }) }),
      fc
        .record({
          type: fc.constant('exponential' as const),
          initialDelayMs: fc.integer({ min: 0, max: 600_000 }),
          multiplier: fc.double({ min: 1, max: 100, noNaN: true }),
          maxDelayMs: fc.integer({ min: 0, max: 86_400_000 }),
          jitter: fc.constantFrom('full' as const, 'equal' as const, 'none' as const),
        })
        .map((b) => ({ ...b, maxDelayMs: Math.max(b.maxDelayMs, b.initialDelayMs) })),
    );
    const attempts = fc.integer({ min: 1, max: 10_000 });
    const randoms = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

    const ceiling = (backoff: Backoff): number => (backoff.type === 'fixed' ? backoff.delayMs : backoff.maxDelayMs);

    it('is a whole number of ms, never negative, never above the cap', () => {
      fc.assert(
        fc.property(backoffs, attempts, randoms, (backoff, attempt, random) => {
          const delay = backoffDelay(backoff, attempt, always(random));
          expect(Number.isSafeInteger(delay)).toBe(true);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(ceiling(backoff));
        }),
      );
    });

    it('fixed is constant', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 86_400_000 }), attempts, attempts, randoms, (delayMs, a, b, random) => {
          const backoff: Backoff = { type: 'fixed', delayMs };
          expect(backoffDelay(backoff, a, always(random))).toBe(delayMs);
          expect(backoffDelay(backoff, b)).toBe(delayMs);
        }),
      );
    });

    it('without jitter never shrinks from one attempt to the next', () => {
      fc.assert(
        fc.property(backoffs, attempts, (backoff, attempt) => {
          const none = backoff.type !== 'exponential' ? backoff : { ...backoff, jitter: 'none' as const };
          expect(backoffDelay(none, attempt + 1)).toBeGreaterThanOrEqual(backoffDelay(none, attempt));
        }),
      );
    });

    it('jitter stays within [0, delay] (full) and [delay/2, delay] (equal) of the delay without jitter', () => {
      fc.assert(
        fc.property(backoffs, attempts, randoms, (backoff, attempt, random) => {
          if (backoff.type !== 'exponential') return;
          const delay = backoffDelay({ ...backoff, jitter: 'none' }, attempt);
          const full = backoffDelay({ ...backoff, jitter: 'full' }, attempt, always(random));
          const equal = backoffDelay({ ...backoff, jitter: 'equal' }, attempt, always(random));
          expect(full).toBeLessThanOrEqual(delay);
          expect(equal).toBeGreaterThanOrEqual(Math.floor(delay / 2));
          expect(equal).toBeLessThanOrEqual(delay);
        }),
      );
    });
  });
});

describe('exponentialDelay, the one exponential backoff', () => {
  const growth = { initialMs: 1_000, multiplier: 2, maxMs: 10_000 };

  it('grows from the first wait by the multiplier per step, up to the cap', () => {
    expect([0, 1, 2, 3, 4, 40, 5_000].map((step) => exponentialDelay(growth, step))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
  });

  it('scales by the spread it is given before the cap, so a spread never passes the cap', () => {
    expect(exponentialDelay({ initialMs: 300, multiplier: 2, maxMs: 30_000 }, 2, 0.8)).toBe(960);
    expect(exponentialDelay({ initialMs: 300, multiplier: 2, maxMs: 30_000 }, 2, 1.2)).toBe(1_440);
    expect(exponentialDelay(growth, 3, 1.2)).toBe(9_600);
    expect(exponentialDelay(growth, 4, 1.2)).toBe(10_000);
  });

  it('waits nothing from a first wait of 0, however many steps (never NaN)', () => {
    expect(exponentialDelay({ initialMs: 0, multiplier: 2, maxMs: 10_000 }, 5_000)).toBe(0);
  });

  it('is a whole number of ms between 0 and the cap', () => {
    fc.assert(fc.property(fc.nat(60_000), fc.double({ min: 1, max: 10, noNaN: true }), fc.nat(120_000), fc.nat(2_000), fc.double({ min: 0, max: 2, noNaN: true }), (initialMs, multiplier, maxMs, step, spread) => {
      const delay = exponentialDelay({ initialMs, multiplier, maxMs }, step, spread);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(maxMs);
    }));
  });
});
