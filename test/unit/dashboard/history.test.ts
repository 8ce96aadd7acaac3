import type { GroupStatus, PartitionStatus } from '../../../src/admin';
import { History, sampleOf } from '../../../src/dashboard';

function partition(topic: string, role: PartitionStatus['role'], lag: number | undefined, blocked = 0): PartitionStatus {
  return {
    topic, partition: 0, role, committed: 0, frontier: 0, highest: 0, window: 0, endOffset: lag, startOffset: 0, lag,
    blockedLanes: blocked, heldLanes: 0, parked: blocked * 2, recoveries: 0, lastRecoveredAtMs: undefined, recovering: false,
  };
}

function status(readAtMs: number, partitions: PartitionStatus[]): GroupStatus {
  return { group: 'g', completionGroup: 'g.lanes', readAtMs, partitions, retryDepth: 0, deadLetters: 0, missingTopics: [] };
}

describe('dashboard history', () => {
  it('keeps lag per partition and retry depth per tier, the dead-letter topic left out', () => {
    const sample = sampleOf(status(1_000, [partition('orders', 'source', 5, 2), partition('g.retry.5s', 'retry', 3), partition('g.dlq', 'dead-letter', 9)]));
    expect(sample).toEqual({ atMs: 1_000, lag: { 'orders-0': 5, 'g.retry.5s-0': 3 }, retryDepth: { '5s': 3 }, blockedLanes: 2, heldLanes: 0, parked: 4 });
  });

  it('gives chart columns, null where a series had no value, and drops the oldest sample past its capacity', () => {
    const history = new History(2);
    history.add(sampleOf(status(1_000, [partition('orders', 'source', 1)])));
    history.add(sampleOf(status(2_000, [partition('orders', 'source', 2)])));
    history.add(sampleOf(status(3_000, [partition('orders', 'source', 3), partition('g.retry.1m', 'retry', 4)])));
    expect(history.series()).toEqual({
      times: [2, 3],
      lag: { 'orders-0': [2, 3], 'g.retry.1m-0': [null, 4] },
      retryDepth: { '1m': [null, 4] },
      blockedLanes: [0, 0],
    });
  });
});
