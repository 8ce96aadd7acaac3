import type { Backoff } from './lanes-options';

/**
 * Milliseconds to wait before the next attempt, after attempt `failedAttempt` (1 = the first run) failed.
 * Tiers (the default): the `failedAttempt`-th tier's delay, the last tier's once the tiers run out. Fixed: always `delayMs`. Exponential: `min(maxDelayMs, initialDelayMs * multiplier^(failedAttempt - 1))`,
 * rounded to whole ms, then jitter: `'full'` picks uniformly in [0, delay], `'equal'` in [delay/2, delay],
 * `'none'` keeps the delay. The result is a whole number of ms in [0, maxDelayMs]. A user's
 * `RetryLaterError(delayMs)` overrides this for its attempt.
 *
 * @param random Uniform in [0, 1) like `Math.random`; injected so tests are deterministic.
 * @throws RangeError when `failedAttempt` is not a positive integer.
 * @example
 * backoffDelay({ type: 'tiers', delaysMs: [5_000, 60_000, 600_000], maxDelayMs: 600_000 }, 2); // 60_000
 * backoffDelay({ type: 'tiers', delaysMs: [5_000, 60_000, 600_000], maxDelayMs: 600_000 }, 4); // 600_000
 * const backoff = { type: 'exponential', initialDelayMs: 1_000, multiplier: 2, maxDelayMs: 600_000, jitter: 'none' } as const;
 * backoffDelay(backoff, 1); // 1_000
 * backoffDelay(backoff, 3); // 4_000
 * backoffDelay(backoff, 30); // 600_000
 * backoffDelay({ ...backoff, jitter: 'full' }, 3, () => 0.5); // 2_000
 */
export function backoffDelay(backoff: Backoff, failedAttempt: number, random: () => number = Math.random): number {
  if (!Number.isSafeInteger(failedAttempt) || failedAttempt < 1) {
    throw new RangeError(`Expected \`failedAttempt\` to be a positive integer, got \`${String(failedAttempt)}\` (${typeof failedAttempt})`);
  }
  if (backoff.type === 'fixed') return backoff.delayMs;
  if (backoff.type === 'tiers') return backoff.delaysMs[Math.min(failedAttempt, backoff.delaysMs.length) - 1] ?? backoff.maxDelayMs;

  const { initialDelayMs, multiplier, maxDelayMs, jitter } = backoff;
  const delay = exponentialDelay({ initialMs: initialDelayMs, multiplier, maxMs: maxDelayMs }, failedAttempt - 1);
  switch (jitter) {
    case 'none':
      return delay;
    case 'full':
      return uniformBetween(0, delay, random);
    case 'equal': {
      const half = Math.floor(delay / 2);
      return half + uniformBetween(0, delay - half, random);
    }
  }
}

/** A whole number uniform in [low, high]; clamped, so a `random` that returns 1 (or worse) cannot overshoot. */
function uniformBetween(low: number, high: number, random: () => number): number {
  const picked = low + Math.floor(random() * (high - low + 1));
  return Number.isNaN(picked) ? high : Math.min(high, Math.max(low, picked));
}

/** An exponential curve of waits: from `initialMs`, times `multiplier` per step, at most `maxMs`. */
export interface Growth {
  readonly initialMs: number;
  readonly multiplier: number;
  readonly maxMs: number;
}

/**
 * The one exponential backoff: `initialMs * multiplier^step` (step 0 is the first wait), scaled by `spread` (a jitter
 * factor the caller draws; 1 for none), rounded to whole ms, at most `maxMs`. A record's retries (`backoffDelay`), the
 * member-less committer's retries and the offline trigger's resends all wait along it.
 *
 * @example
 * exponentialDelay({ initialMs: 1_000, multiplier: 2, maxMs: 10_000 }, 3); // 8_000
 * exponentialDelay({ initialMs: 1_000, multiplier: 2, maxMs: 10_000 }, 40); // 10_000
 * exponentialDelay({ initialMs: 300, multiplier: 2, maxMs: 30_000 }, 2, 1.2); // 1_440
 */
export function exponentialDelay(growth: Growth, step: number, spread = 1): number {
  const { initialMs, multiplier, maxMs } = growth;
  // multiplier^step overflows to Infinity for a large step; 0 * Infinity would be NaN, hence the explicit zero case.
  const grown = initialMs === 0 || spread === 0 ? 0 : initialMs * multiplier ** step * spread;
  return Math.round(Math.min(maxMs, grown));
}
