import type { KafkaRecord } from '../../../src/event';
import type { PartitionRef } from '../../../src/ports/partition';
import type { HandOffItem } from '../../../src/ports/handoff';
import { recoveryStart } from '../../../src/durability/first-minute';
import type { DurableView } from '../../../src/durability/marker';
import { resolveOptions } from '../../../src/options';
import { recoverPartition, RECOVERY_FENCE_MS, type RecoveryCommit, type RecoveryStore } from '../../../src/recovery/recover';
import type { RecordLog } from '../../../src/recovery/read-range';
import { batchOf, record } from '../../support/fake-scope';

const NOW = 1_700_000_000_000;
const options = resolveOptions({ group: 'recover-unit', retry: { tiers: ['5s', '1m'] } });

/** A partition's records at their offsets, as Kafka keeps them: the in-memory log a recovery reads again. */
function memoryLog(records: readonly KafkaRecord[], low = records[0]?.offset ?? 0): RecordLog & { reads: Array<[number, number]> } {
  const end = (records.at(-1)?.offset ?? low - 1) + 1;
  const reads: Array<[number, number]> = [];
  return {
    reads,
    offsets: async () => ({ low, end }),
    read: async (_topic, _partition, from, to) => {
      reads.push([from, to]);
      return records.filter((r) => r.offset >= from && r.offset < to);
    },
  };
}

/** Every step a recovery asks of the completion state, in order: the rebuild door's and the heads' moves. */
function recordingStore(): { store: RecoveryStore; steps: string[]; parked: Map<string, number[]> } {
  const steps: string[] = [];
  const parked = new Map<string, number[]>();
  const store = {
    rebuild: () => ({
      fence: async (untilMs: number) => void steps.push(`fence until +${untilMs - NOW}`),
      begin: async (start: number, highest: number) => void steps.push(`begin ${start}..${highest}`),
      records: async ({ from, to, lanes, records }: { from: number; to: number; lanes: readonly string[]; records: ReadonlyArray<{ offset: number; lane: number }> }) => {
        steps.push(`records ${from}..${to}`);
        for (const r of records) if (r.lane > 0) parked.set(lanes[r.lane - 1]!, [...(parked.get(lanes[r.lane - 1]!) ?? []), r.offset]);
      },
      end: async (generation: string) => void steps.push(`end ${generation}`),
      track: async () => void steps.push('track'),
    }),
    markDone: async (_ref: PartitionRef, offsets: readonly number[]) => void steps.push(`done ${offsets.join(',')}`),
    advance: async (_ref: PartitionRef, lane: string, head: { offset: number; attempt: number }, to: { leaseUntilMs: number }) =>
      void steps.push(`advance ${lane}@${head.offset} lease ${to.leaseUntilMs}`),
    release: async () => void steps.push('release'),
    durablyMarked: async () => undefined,
  };
  return { store: store as unknown as RecoveryStore, steps, parked };
}

function sinkOf(written: HandOffItem[], steps: string[]): { write: (items: readonly HandOffItem[]) => Promise<Array<{ status: 'written' }>> } {
  return {
    write: async (items) => {
      written.push(...items);
      steps.push(`write ${items.map((item) => item.origin.offset).join(',')}`);
      return items.map(() => ({ status: 'written' as const }));
    },
  };
}

const ref: PartitionRef = { group: options.group, topic: 'orders', partition: 0 };

describe('recoverPartition', () => {
  it('fences, reads the partition again from the durable frontier, rebuilds each lane behind its first record and hands the heads and lane-less records to the first tier', async () => {
    // Prepare: offsets 10..15, keys a b a (none) b a; the completion group committed 12
    const records = [record(10, 'a'), record(11, 'b'), record(12, 'a'), keyless(13), record(14, 'b'), record(15, 'a')];
    const log = memoryLog(records);
    const { store, steps, parked } = recordingStore();
    const written: HandOffItem[] = [];
    const found: DurableView = { committed: 12, marker: { generation: 'g1', highest: 15, since: 0 } };

    // Act
    const { recovered, rewoundTo } = await recoverPartition({
      parts: { options, store, sink: sinkOf(written, steps), log, now: () => NOW },
      ref,
      durable: found,
      start: recoveryStart(found, undefined),
    });

    // Assess: the fence comes before the read, the rebuild before any copy, the records from the frontier on
    expect(rewoundTo).toBeUndefined();
    expect(log.reads).toEqual([[12, 16]]);
    expect(steps[0]).toBe(`fence until +${RECOVERY_FENCE_MS}`);
    expect(steps.slice(1, 3)).toEqual(['begin 12..15', 'records 12..15']);
    expect(recovered).toMatchObject({ from: 12, to: 16, records: 4, lanes: 2, independent: 1, heads: 2, generation: 'g1' });
    // Each lane's first record is its head, its later ones parked behind it, in offset order
    expect(Object.fromEntries(parked)).toEqual({ [laneOf(records[2]!)]: [12, 15], [laneOf(records[4]!)]: [14] });
    // The lane-less record is written, then its done bit set; the state is closed and tracked before the heads' copies
    const order = (prefix: string): number => steps.findIndex((step) => step.startsWith(prefix));
    expect(order('write 13')).toBeLessThan(order('done 13'));
    expect(order('done 13')).toBeLessThan(order('end g1'));
    expect(order('end g1')).toBeLessThan(order('track'));
    expect(order('track')).toBeLessThan(order('write 12,14'));
    // The heads' copies are due at once, attempt 1, on the first tier; then their leases come off
    expect(written.filter((item) => item.lane !== undefined).map((item) => [item.origin.offset, item.attempt, item.topic])).toEqual([
      [12, 1, 'recover-unit.retry.5s'],
      [14, 1, 'recover-unit.retry.5s'],
    ]);
    expect(steps.filter((step) => step.startsWith('advance'))).toEqual([`advance ${laneOf(records[2]!)}@12 lease 0`, `advance ${laneOf(records[4]!)}@14 lease 0`]);
  });

  it('commits the rewind before it rebuilds, from the origin a retry copy reported below the marker', async () => {
    // Prepare
    const records = [record(5, 'a'), record(6, 'a'), record(7, 'b')];
    const { store, steps } = recordingStore();
    const commits: RecoveryCommit[] = [];
    const found: DurableView = { committed: 7, marker: { generation: 'g2', highest: 7, since: 7 } };

    // Act: a retry copy reported origin 5, below the marker's since
    const { recovered, rewoundTo } = await recoverPartition({
      parts: { options, store, sink: sinkOf([], steps), log: memoryLog(records), now: () => NOW },
      ref,
      durable: found,
      start: recoveryStart(found, 5),
      commit: async (move) => {
        commits.push(move);
        steps.push('commit');
      },
    });

    // Assess
    expect(rewoundTo).toBe(5);
    expect(commits).toEqual([{ from: 7, to: 5, marker: { generation: 'g2', highest: 7, since: 5 }, rewind: true }]);
    expect(steps.indexOf('commit')).toBeLessThan(steps.findIndex((step) => step.startsWith('fence')));
    expect(recovered).toMatchObject({ from: 5, records: 3, heads: 2, generation: 'g2' });
  });

  it('commits the first marker at its start for a partition nothing was committed for', async () => {
    // Prepare
    const { store, steps } = recordingStore();
    const commits: RecoveryCommit[] = [];

    // Act
    const { recovered } = await recoverPartition({
      parts: { options, store, sink: sinkOf([], steps), log: memoryLog([record(3, 'a'), record(4, 'b')]), now: () => NOW },
      ref,
      durable: { committed: undefined, marker: undefined },
      start: recoveryStart({ committed: undefined, marker: undefined }, undefined),
      commit: async (move) => void commits.push(move),
    });

    // Assess: read from the earliest offset, and the new generation committed as the marker
    expect(recovered.from).toBe(3);
    expect(commits).toEqual([{ from: undefined, to: 3, marker: { generation: recovered.generation, highest: 2, since: 3 } }]);
  });
});

/** A record with a null key: it belongs to no lane. */
function keyless(offset: number): KafkaRecord {
  return batchOf([{ topic: 'orders', partition: 0, offset, timestamp: NOW, key: null, value: Buffer.from('{}') }]).records[0]!;
}

function laneOf(r: KafkaRecord): string {
  return Buffer.from(r.key!).toString('base64');
}
