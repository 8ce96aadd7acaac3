/**
 * What a record's exactly-once effects (`ctx.step`, `ctx.send`, output dedupe) share beyond their port
 * (`ports/effects.ts`): the output record a handler sends, the output header, and how long their state lives.
 */
import type { LanesOptions } from '../options/lanes-options';
import { durationMs } from '../options/duration';

/** A record a handler sends with `ctx.send`; `value` other than a string, a Buffer or null is sent as JSON. */
export interface OutputRecord {
  readonly key?: string | Buffer | null;
  readonly value: unknown;
  readonly headers?: Readonly<Record<string, string | Buffer>>;
  /** A partition of its own; default: the producer's partitioner, by key. */
  readonly partition?: number;
}

/**
 * The header that identifies an output, `<group>/<topic>/<partition>/<offset>/<index>`: the group of the stage that
 * sent it, the first origin of the record whose handler sent it, and its place among that record's outputs (group and
 * topic names hold no `/`). A stage with `dedupeOutputs` reads it. One header rather than one per part: the producer
 * encodes every header in a buffer of its own, and three took an output's encoding from about 3 to 5 µs.
 */
export const OUTPUT_HEADER = 'lanes-output';

/** The three headers outputs carried before `OUTPUT_HEADER`, still read: such outputs may still wait in a topic. */
export const LegacyOutputHeader = {
  Group: 'lanes-output-group',
  /** `<topic>/<partition>/<offset>`: the first origin of the record whose handler sent it. */
  Origin: 'lanes-output-origin',
  Index: 'lanes-output-index',
} as const;

/**
 * How long step results, output claims and copy claims are kept: long enough for a record's whole retry path
 * (every attempt waiting the longest delay a tier or the backoff can give, then running to its timeout), plus the
 * replay horizon during which a dead letter may be replayed and find them.
 *
 * @example
 * effectsTtlMs(resolveOptions({ group: 'g' })); // 5 × (10 min + 60 s) + 7 days
 */
export function effectsTtlMs(options: LanesOptions): number {
  const { retry, recordTimeoutMs, steps } = options;
  const longestTier = Math.max(...retry.tiers.map((tier) => durationMs(tier) ?? 0));
  const longestBackoff = retry.backoff.type === 'fixed' ? retry.backoff.delayMs : retry.backoff.maxDelayMs;
  return retry.maxAttempts * (Math.max(longestTier, longestBackoff) + recordTimeoutMs) + steps.replayHorizonMs;
}
