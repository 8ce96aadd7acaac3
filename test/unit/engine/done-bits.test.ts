import { DoneBits } from '../../../src/engine/done-bits';
import type { CompletionPort } from '../../../src/ports/completion';
import type { PartitionRef } from '../../../src/ports/partition';

const SOURCE: PartitionRef = { group: 'g', topic: 'orders', partition: 0 };
const TIER: PartitionRef = { group: 'g', topic: 'g.retry.5s', partition: 0 };

/** A store whose `orders` partition has no state: every mark there fails, as `mark-2.lua` refuses it. */
function storeWithoutSource(): { store: CompletionPort; marked: Array<[string, number[]]> } {
  const marked: Array<[string, number[]]> = [];
  const store = {
    markDone: async (ref: PartitionRef, offsets: readonly number[]) => {
      if (ref.topic === SOURCE.topic) throw new Error('not admitted');
      marked.push([ref.topic, [...offsets]]);
      return offsets.length;
    },
  } as unknown as CompletionPort;
  return { store, marked };
}

describe('DoneBits', () => {
  it('reports a record whose bit cannot be stored for redelivery', async () => {
    // Prepare
    const { store } = storeWithoutSource();
    const lost = jest.fn();
    const bits = new DoneBits(store, lost);

    // Act
    bits.add(SOURCE, 41);
    await bits.flush();

    // Assess
    expect(lost).toHaveBeenCalledWith(SOURCE, [41], expect.any(Error));
  });

  // Found by the randomized histories: after Redis lost an origin partition's state in its first minute, an unordered
  // copy's run set its origin's bit again, that failed, and the retry invocation reported the origin (in no event of
  // its own) for redelivery, for ever.
  it('logs a bit set again as a repair that cannot be stored, and redelivers nothing', async () => {
    // Prepare
    const { store, marked } = storeWithoutSource();
    const lost = jest.fn();
    const repairFailed = jest.fn();
    const bits = new DoneBits(store, lost, undefined, repairFailed);

    // Act
    bits.add(TIER, 7);
    bits.add(SOURCE, 41, true);
    await bits.flush();

    // Assess
    expect(marked).toEqual([['g.retry.5s', [7]]]);
    expect(lost).not.toHaveBeenCalled();
    expect(repairFailed).toHaveBeenCalledWith(SOURCE, [41], expect.any(Error));
  });
});
