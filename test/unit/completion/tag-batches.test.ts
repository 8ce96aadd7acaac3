import { TagBatches } from '../../../src/completion/tag-batches';

/** A batcher that records the items of each call and answers each item times ten (or fails a call holding `fail`). */
function recording(maxPerCall?: number, fail?: number): { batches: TagBatches<number, number>; calls: number[][] } {
  const calls: number[][] = [];
  const batches = new TagBatches<number, number>(async (items) => {
    calls.push([...items]);
    if (fail !== undefined && items.includes(fail)) throw new Error(`call with ${fail} failed`);
    return items.map((item) => item * 10);
  }, maxPerCall);
  return { batches, calls };
}

const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

describe('TagBatches', () => {
  it('runs the items of one turn as one call per tag, each item answered with its own result', async () => {
    const { batches, calls } = recording();
    const results = await Promise.all([batches.add('a', 1), batches.add('b', 2), batches.add('a', 3)]);
    expect(results).toEqual([10, 20, 30]);
    expect(calls).toEqual([[1, 3], [2]]);
  });

  it('splits a tag holding more than maxPerCall items into calls of at most that many, in order', async () => {
    const { batches, calls } = recording(16);
    const results = await Promise.all([...range(0, 40).map((i) => batches.add('a', i)), ...range(100, 3).map((i) => batches.add('b', i))]);
    expect(results).toEqual([...range(0, 40), ...range(100, 3)].map((i) => i * 10));
    expect(calls).toEqual([range(0, 16), range(16, 16), range(32, 8), range(100, 3)]);
  });

  it('fails only the items of a call that failed', async () => {
    const { batches } = recording(2, 3);
    const outcomes = await Promise.allSettled(range(0, 6).map((i) => batches.add('a', i)));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      0, 10, 'call with 3 failed', 'call with 3 failed', 40, 50,
    ]);
  });

  it('runs items added in a later turn in a call of their own', async () => {
    const { batches, calls } = recording();
    await batches.add('a', 1);
    await batches.add('a', 2);
    expect(calls).toEqual([[1], [2]]);
  });

  it('refuses a cap below one', () => {
    expect(() => new TagBatches(async () => [], 0)).toThrow('Expected maxPerCall to be at least 1, got 0');
  });
});
