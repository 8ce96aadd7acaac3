import { copiesFor } from '../../../src/handoff/copies';
import { resolveOptions } from '../../../src/options';
import { kafkaRecord } from '../handoff/factories';

const NOW = 1_718_000_000_000;
const basis = { record: kafkaRecord(), origin: { topic: 'orders', partition: 0, offset: 7 }, lane: 'YzE=' };
const failure = { name: 'Error', message: 'payment provider down' };

/** Each retry copy of one record failing every attempt: the topic it is written to and how long after the failure it is due. */
function schedule(input: Parameters<typeof resolveOptions>[0]): Array<[string, number]> {
  const options = resolveOptions(input, {});
  const copies = copiesFor(options, () => NOW);
  const attempts = Array.from({ length: options.retry.maxAttempts - 1 }, (_, index) => index + 1);
  return attempts.map((attempt) => {
    const copy = copies.afterFailure(basis, { attempt, firstFailureAtMs: NOW, error: failure });
    return [copy.topic, copy.dueAtMs - NOW];
  });
}

describe('the retry schedule a group gets by default', () => {
  it('retries after each tier in turn, from that tier, the last tier repeating until maxAttempts', () => {
    // Act
    const retries = schedule({ group: 'shop', retry: { maxAttempts: 5, tiers: ['5s', '1m', '10m'] } });

    // Assess
    expect(retries).toEqual([
      ['shop.retry.5s', 5_000],
      ['shop.retry.1m', 60_000],
      ['shop.retry.10m', 600_000],
      ['shop.retry.10m', 600_000],
    ]);
  });

  it('with fewer attempts than tiers uses the first tiers only', () => {
    expect(schedule({ group: 'shop', retry: { maxAttempts: 3 } })).toEqual([
      ['shop.retry.5s', 5_000],
      ['shop.retry.1m', 60_000],
    ]);
  });

  it('an explicit backoff picks the longest tier not above each delay, as before', () => {
    const retries = schedule({
      group: 'shop',
      retry: { maxAttempts: 4, tiers: ['5s', '1m'], backoff: { type: 'exponential', initialDelayMs: 10_000, multiplier: 4, jitter: 'none' } },
    });
    expect(retries).toEqual([
      ['shop.retry.5s', 10_000],
      ['shop.retry.5s', 40_000],
      ['shop.retry.1m', 160_000],
    ]);
  });

  it("a RetryLaterError's own delay overrides the tiers for its attempt", () => {
    const options = resolveOptions({ group: 'shop' }, {});
    const copy = copiesFor(options, () => NOW).afterFailure(basis, { attempt: 1, firstFailureAtMs: NOW, error: failure, delayMs: 90_000 });
    expect([copy.topic, copy.dueAtMs - NOW]).toEqual(['shop.retry.1m', 90_000]);
  });
});
