import type { PartitionAudit } from '../../../src/ports/partition';
import { durableMoves, partitionsToCheck, type PartitionCheck } from '../../../src/committer/durable-moves';
import { LossReason } from '../../../src/durability/loss';

function check(overrides: Omit<Partial<PartitionCheck>, 'audit'> & { audit?: Partial<PartitionAudit> } = {}): PartitionCheck {
  const { audit, ...rest } = overrides;
  return {
    ref: { group: 'g', topic: 'orders', partition: 0 },
    audit: {
      present: true, base: 0, highest: 19, generation: 'a1', parked: 0, parkedInLists: 0, lanes: 0, openLanes: 0,
      lowestHead: undefined, recoveringUntil: undefined, recoveries: 0, ...audit,
    },
    durable: { committed: 10, marker: { generation: 'a1', highest: 9 } },
    loss: undefined,
    generation: 'a1',
    ...rest,
  };
}

describe('durableMoves', () => {
  it('commits the frontier with the marker when no lane is blocked', () => {
    expect(durableMoves([{ topic: 'orders', partition: 0, from: 10, to: 20 }], [check()])).toEqual([
      { topic: 'orders', partition: 0, from: 10, to: 20, metadata: 'kl1:a1:19' },
    ]);
  });

  it('never commits past the lowest head of a blocked lane: parked records are not terminal', () => {
    expect(durableMoves([{ topic: 'orders', partition: 0, from: 10, to: 20 }], [check({ audit: { lowestHead: 14 } })])).toEqual([
      { topic: 'orders', partition: 0, from: 10, to: 14, metadata: 'kl1:a1:19' },
    ]);
    // Held at the committed offset: no move, the marker is current.
    expect(durableMoves([{ topic: 'orders', partition: 0, from: 10, to: 20 }], [check({ audit: { lowestHead: 10 } })])).toEqual([]);
  });

  it('writes a new marker at the committed offset when the commits lack the current generation', () => {
    const stale = check({ durable: { committed: 10, marker: undefined }, audit: { lowestHead: 10 } });
    expect(durableMoves([], [stale])).toEqual([{ topic: 'orders', partition: 0, from: 10, to: 10, metadata: 'kl1:a1:19' }]);
  });

  it('carries where the state was born: the lowest offset the commits vouch for', () => {
    expect(durableMoves([{ topic: 'orders', partition: 0, from: undefined, to: 20 }], [check({ durable: { committed: undefined, marker: undefined }, audit: { born: 10 } })])).toEqual([
      { topic: 'orders', partition: 0, from: undefined, to: 20, metadata: 'kl1:a1:19:10' },
    ]);
  });

  it('leaves a partition with a loss alone: the recovery deals with it', () => {
    const lost = check({ loss: { reason: LossReason.StateMissing, detail: 'gone' } });
    expect(durableMoves([{ topic: 'orders', partition: 0, from: 10, to: 20 }], [lost])).toEqual([]);
  });
});

describe('partitionsToCheck', () => {
  it('adds the partitions the completion group carries a marker for to the tracked ones, each once, sorted', () => {
    const tracked = [{ group: 'g', topic: 'orders', partition: 1 }];
    const committed = [
      { topic: 'orders', partition: 0, offset: 5, metadata: 'kl1:a1:4' },
      { topic: 'orders', partition: 1, offset: 7, metadata: 'kl1:a1:6' },
      { topic: 'other', partition: 0, offset: 3 },
    ];
    expect(partitionsToCheck('g', tracked, committed)).toEqual([
      { group: 'g', topic: 'orders', partition: 0 },
      { group: 'g', topic: 'orders', partition: 1 },
    ]);
  });
});
