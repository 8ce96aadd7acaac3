import { ConfigError, describeValue } from '../errors';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

// A canonical positive integer (no sign, no leading zero): one delay has one spelling, so one retry topic name.
const DURATION = /^([1-9][0-9]*)(ms|s|m|h)$/;

/** What a duration must look like, for messages. */
export const DURATION_EXPECTED = 'a duration `<integer><unit>` with a positive integer and unit `ms`, `s`, `m` or `h`, like `5s`';

/** Milliseconds of a duration, or `undefined` if `text` is not one (see `parseDuration`). */
export function durationMs(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const match = DURATION.exec(text);
  if (match === null) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/**
 * Milliseconds of a retry tier duration: a positive integer without leading zeros and a unit `ms`, `s`, `m` or
 * `h`. The text becomes part of a topic name (`<group>.retry.5s`), hence no spaces, fractions or aliases.
 *
 * @throws ConfigError when `text` is not such a duration.
 * @example
 * parseDuration('5s'); // 5_000
 * parseDuration('10m'); // 600_000
 * parseDuration('1.5s'); // throws ConfigError: Invalid duration `1.5s` (string): expected a duration ...
 */
export function parseDuration(text: string): number {
  const ms = durationMs(text);
  if (ms === undefined) throw new ConfigError(`Invalid duration ${describeValue(text)}: expected ${DURATION_EXPECTED}`);
  return ms;
}
