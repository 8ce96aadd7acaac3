import { TOPIC_NAME } from './constants';
import { parseDuration } from './duration';
import { retryTopic } from './names';
import type { RetryTopic } from './types';

export { deadLetterTopic, retryTopic } from './names';

/**
 * The retry topics of a group, one per tier, in the order of the tiers (ascending delays once validated).
 *
 * @throws ConfigError when a tier is not a duration.
 * @example
 * retryTopics('orders-svc', ['5s', '1m']);
 * // [{ tier: '5s', topic: 'orders-svc.retry.5s', delayMs: 5_000 }, { tier: '1m', topic: 'orders-svc.retry.1m', delayMs: 60_000 }]
 */
export function retryTopics(group: string, tiers: readonly string[]): RetryTopic[] {
  return tiers.map((tier) => ({ tier, topic: retryTopic(group, tier), delayMs: parseDuration(tier) }));
}

/**
 * The tier a record due in `delayMs` goes to: the largest tier whose delay is at most `delayMs`, or the first tier
 * when `delayMs` is below every tier (already due, or due sooner than the shortest tier). A record due later than
 * the last tier goes to the last tier; the retry function bounces it there until it is due (docs/ARCHITECTURE.md, "Copies and their headers").
 *
 * @throws RangeError when `tiers` is empty or `delayMs` is NaN.
 * @throws ConfigError when a tier is not a duration.
 * @example
 * tierFor(30_000, ['5s', '1m', '10m']); // '5s'
 * tierFor(60_000, ['5s', '1m', '10m']); // '1m'
 * tierFor(0, ['5s', '1m', '10m']); // '5s'
 * tierFor(3_600_000, ['5s', '1m', '10m']); // '10m'
 */
export function tierFor(delayMs: number, tiers: readonly string[]): string {
  if (Number.isNaN(delayMs)) throw new RangeError('Expected `delayMs` to be a number, got `NaN`');
  if (tiers.length === 0) throw new RangeError('Expected at least one retry tier, got none');
  // Validated tiers ascend; this does not rely on it, so a hand-built list still picks the right tier.
  let shortest = 0;
  let longestDue = -1;
  for (let i = 0; i < tiers.length; i += 1) {
    const ms = tierMs(tiers[i]!);
    if (ms < tierMs(tiers[shortest]!)) shortest = i;
    if (ms <= delayMs && (longestDue < 0 || ms > tierMs(tiers[longestDue]!))) longestDue = i;
  }
  return tiers[longestDue < 0 ? shortest : longestDue]!;
}

/** A tier's delay, parsed once per tier name (every copy picks its tier: `tierFor`). */
const TIER_MS = new Map<string, number>();
function tierMs(tier: string): number {
  let ms = TIER_MS.get(tier);
  if (ms === undefined) TIER_MS.set(tier, (ms = parseDuration(tier)));
  return ms;
}

/**
 * Why `name` is not a valid Kafka topic name, or `undefined` if it is one.
 *
 * @example
 * topicNameProblem('orders.dlq'); // undefined
 * topicNameProblem('my orders.dlq'); // 'it contains ` `, ...'
 */
export function topicNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'it is empty';
  if (name === '.' || name === '..') return `\`${name}\` is reserved`;
  const invalid = [...new Set(name.match(TOPIC_NAME.invalidCharacter))];
  if (invalid.length > 0) {
    return `it contains ${invalid.map((c) => `\`${c}\``).join(', ')}; Kafka topic names allow only letters, digits, \`.\`, \`_\` and \`-\``;
  }
  if (name.length > TOPIC_NAME.maxLength) {
    return `it has ${name.length} characters; Kafka topic names have at most ${TOPIC_NAME.maxLength}`;
  }
  return undefined;
}

/**
 * The retry topic for a record due in `delayMs`: `retryTopic(group, tierFor(delayMs, tiers))`.
 *
 * @example
 * retryTopicFor('orders-svc', ['5s', '1m', '10m'], 90_000); // 'orders-svc.retry.1m'
 */
export function retryTopicFor(group: string, tiers: readonly string[], delayMs: number): string {
  return retryTopic(group, tierFor(delayMs, tiers));
}
