import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis';
import { CompletionStore, parkKey, partitionKeys } from '../../src/completion';
import { LaneConflictError, NotAdmittedError, NotHeadError, StaleEpochError } from '../../src/ports/errors';
import type { PartitionRef } from '../../src/ports/partition';
import { stepsBlockKey } from '../../src/completion/keys';
import { RedisEffects } from '../../src/completion/effects-store';
import { CompletionModel } from '../../src/testing/completion-model';
import { redisSetups, uniqueName } from './support/stack';
import { suspectLoss } from '../../src/durability/loss';

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const records = (offsets: number[]) => offsets.map((offset) => ({ offset }));

describe.each(redisSetups())('completion engine on Redis $name', ({ connect }) => {
  let redis: Redis | Cluster;
  let store: CompletionStore;
  let ref: PartitionRef;

  beforeAll(() => {
    redis = connect();
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(() => {
    store = new CompletionStore(redis, { maxWindow: 10_000, maxParked: 100 });
    ref = { group: uniqueName('grp{:}'), topic: uniqueName('topic'), partition: 0 };
  });

  describe('done bits and the frontier', () => {
    it('moves the frontier across bits 0, 7 and 8 (byte boundaries)', async () => {
      await store.admit(ref, records(range(0, 20)));
      await store.markDone(ref, range(1, 7));
      expect((await store.frontier(ref))?.frontier).toBe(0);
      await store.markDone(ref, [0]);
      expect((await store.frontier(ref))?.frontier).toBe(8);
      await store.markDone(ref, [9, 10]);
      expect((await store.frontier(ref))?.frontier).toBe(8);
      await store.markDone(ref, [8]);
      expect((await store.frontier(ref))?.frontier).toBe(11);
    });

    it('never lets the frontier pass the highest delivered offset', async () => {
      await store.admit(ref, records([0, 1, 2]));
      await store.markDone(ref, [0, 1, 2]);
      expect(await store.frontier(ref)).toMatchObject({ frontier: 3, highest: 2 });
    });

    it('has no frontier before anything was admitted', async () => {
      expect(await store.frontier(ref)).toBeUndefined();
    });

    it('refuses to mark an offset that was never delivered, changing nothing', async () => {
      await store.admit(ref, records([0, 1]));
      await expect(store.markDone(ref, [0, 5])).rejects.toBeInstanceOf(NotAdmittedError);
      expect((await store.frontier(ref))?.frontier).toBe(0);
    });

    it('deletes the step results given with the bits in the same call, and none when the call is refused', async () => {
      await store.admit(ref, records(range(0, 2)));
      const effects = new RedisEffects(redis);
      // Records over 24 step blocks, each with a result.
      await Promise.all(range(0, 1_500).map((offset) => effects.saveStep({ ref, offset }, 'charge', `"ch-${offset}"`, 60_000)));
      const stored = (offset: number) => redis.hexists(stepsBlockKey({ ref, offset }), `${offset}:charge`);
      const charged = (offset: number) => ({ offset, names: ['charge'] });

      await expect(store.markDone(ref, [0, 5], 0, [charged(0)])).rejects.toBeInstanceOf(NotAdmittedError);
      const afterRefused = await stored(0);
      await store.markDone(ref, [0, 1], 0, range(0, 1_500).filter((offset) => offset !== 700).map(charged));

      expect(afterRefused).toBe(1);
      expect((await store.frontier(ref))?.frontier).toBe(2);
      expect(await Promise.all([0, 750, 1_500].map(stored))).toEqual([0, 0, 0]);
      // A block left without results is gone; the one still holding a record's results stays, with that record alone.
      expect(await redis.exists(stepsBlockKey({ ref, offset: 0 }))).toBe(0);
      expect(await redis.hkeys(stepsBlockKey({ ref, offset: 700 }))).toEqual(['700:charge']);
    });

    it('counts only newly set bits, so replaying a mark is harmless', async () => {
      await store.admit(ref, records(range(0, 9)));
      expect(await store.markDone(ref, [0, 1, 2])).toBe(3);
      expect(await store.markDone(ref, [0, 1, 2, 3])).toBe(1);
    });

    it('sets long runs of offsets a byte at a time and counts only the newly set bits among them', async () => {
      await store.admit(ref, records(range(3, 1_002)));
      // Scattered first (bit by bit), then long unaligned runs over them, in any order and with repeats.
      expect(await store.markDone(ref, [700, 5, 77, 150, 151])).toBe(5);
      expect(await store.markDone(ref, [...range(3, 499), 150, ...range(600, 900)].reverse())).toBe(497 + 301 - 5);
      expect((await store.frontier(ref))?.frontier).toBe(500);
      expect(await store.markDone(ref, range(490, 1_002))).toBe(513 - 10 - 301);
      expect(await store.frontier(ref)).toMatchObject({ frontier: 1_003, highest: 1_002 });
      // Everything again: nothing new.
      expect(await store.markDone(ref, range(3, 1_002))).toBe(0);
    });

    it('sets exactly the marked bits and counts the newly set ones, whether they come scattered, close together or in runs', async () => {
      const keys = partitionKeys(ref);
      const total = 5_000;
      await store.admit(ref, records(range(0, total - 1)));
      const done = new Set<number>();
      // Marks as records of many keys finish them: bits alone, bits a few apart, across byte edges, runs, repeats.
      const mark = fc.oneof(
        fc.array(fc.nat(total - 1), { minLength: 1, maxLength: 40 }),
        fc.tuple(fc.nat(total - 1), fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 60 })).map(([from, steps]) => {
          let at = from;
          return steps.map((step) => (at = Math.min(total - 1, at + step)));
        }),
        fc.tuple(fc.nat(total - 1), fc.integer({ min: 1, max: 300 })).map(([from, length]) => range(from, Math.min(total - 1, from + length))),
      );
      for (const offsets of fc.sample(fc.array(mark, { minLength: 1, maxLength: 4 }).map((parts) => parts.flat()), { numRuns: 60, seed: 7 })) {
        const newly = new Set(offsets.filter((offset) => !done.has(offset))).size;
        expect(await store.markDone(ref, offsets)).toBe(newly);
        for (const offset of offsets) done.add(offset);
      }
      const bits = (await redis.getBuffer(keys.bits))!;
      const set = range(0, total - 1).filter((offset) => (bits[offset >> 3]! & (128 >> (offset & 7))) !== 0);
      expect(set).toEqual([...done].sort((a, b) => a - b));
    });

    it('answers each of many calls made in one tick with its own reply, also across a reconnect', async () => {
      // Records finishing together make their calls in one tick, on one connection: each must get its own reply,
      // also when the connection drops in between and the calls go out again on a new socket.
      const refs = range(0, 199).map((partition) => ({ ...ref, partition }));
      await Promise.all(refs.map((r) => store.admit(r, records(range(0, r.partition)))));
      await Promise.all(refs.map((r) => store.markDone(r, range(0, r.partition))));
      const frontiers = await Promise.all(refs.map(async (r) => (await store.frontier(r))?.frontier));
      expect(frontiers).toEqual(refs.map((r) => r.partition + 1));

      redis.disconnect(true);
      const again = await Promise.all(refs.map(async (r) => (await store.frontier(r))?.frontier));
      expect(again).toEqual(frontiers);
    });
  });

  describe('where a state was born', () => {
    it('keeps the first offset admitted while base moves on, and a copy below it reports its origin; one above, done, is stale', async () => {
      // Prepare: a state born at 100, its bitmap started afresh at 110 (everything before done), so base moved.
      await store.admit(ref, records([100, 101]));
      await store.markDone(ref, [100, 101]);
      await store.admit(ref, records([110]));
      await store.markDone(ref, [110]);

      // Act
      const stale = (await suspectLoss(store, ref, { origin: 101, nowMs: Date.now() }))?.detail;
      const lost = (await suspectLoss(store, ref, { origin: 42, nowMs: Date.now() }))?.detail;
      await suspectLoss(store, ref, { origin: 57, nowMs: Date.now() });
      const audit = await store.audit(ref);

      // Assess
      expect(audit).toEqual(expect.objectContaining({ base: 110, born: 100, lossReportedFrom: 42 }));
      expect(stale).toBeUndefined();
      expect(lost).toMatch(/offset 42 is below where the state was born, 100/);
    });
  });

  describe('admit', () => {
    it('bridges gaps between delivered offsets (compaction, transaction markers)', async () => {
      await store.admit(ref, records([100, 105, 106]));
      await store.markDone(ref, [100]);
      expect((await store.frontier(ref))?.frontier).toBe(105);
      await store.markDone(ref, [105, 106]);
      expect((await store.frontier(ref))?.frontier).toBe(107);
    });

    it('reports done records as duplicates and runs undone ones again (G7)', async () => {
      const batch = records(range(50, 59));
      expect((await store.admit(ref, batch)).statuses).toEqual(Array(10).fill('run'));
      await store.markDone(ref, range(50, 54));
      const again = await store.admit(ref, batch);
      expect(again.statuses).toEqual([...Array(5).fill('duplicate'), ...Array(5).fill('run')]);
    });

    it('treats offsets below base as done after a trim', async () => {
      await store.admit(ref, records(range(0, 31)));
      await store.markDone(ref, range(0, 19));
      const trimmed = await store.frontier(ref, { trim: true });
      expect(trimmed).toMatchObject({ base: 16, frontier: 20, trimmedBytes: 2 });
      expect((await store.admit(ref, records([3, 17, 25]))).statuses).toEqual(['duplicate', 'duplicate', 'run']);
    });

    it('trims a large done prefix at admission, without a committer, keeping the frontier', async () => {
      const big = new CompletionStore(redis, { maxWindow: 200_000 });
      for (let from = 0; from <= 70_000; from += 10_000) await big.admit(ref, records(range(from, Math.min(from + 9_999, 70_000))));
      for (let from = 0; from < 70_000; from += 10_000) await big.markDone(ref, range(from, from + 9_999));

      await big.admit(ref, records([70_001]));

      expect(await big.frontier(ref)).toMatchObject({ base: 70_000, frontier: 70_000, highest: 70_001 });
      expect(await redis.strlen(partitionKeys(ref).bits)).toBeLessThan(8);
    });

    it('tracks sparse offsets around 10^12 in a small bitmap', async () => {
      const start = 1_000_000_000_000;
      await store.admit(ref, records([start, start + 1, start + 9]));
      await store.markDone(ref, [start, start + 1, start + 9]);
      expect((await store.frontier(ref))?.frontier).toBe(start + 10);
      await store.admit(ref, records([start + 5_000_000]));
      expect((await store.frontier(ref))?.frontier).toBe(start + 5_000_000);
      expect(await redis.strlen(partitionKeys(ref).bits)).toBeLessThan(16);
    });

    it('refuses records beyond the window cap and admits them once the frontier moves', async () => {
      const small = new CompletionStore(redis, { maxWindow: 10, maxParked: 100 });
      const first = await small.admit(ref, records(range(0, 14)));
      expect(first.backPressure).toBe(true);
      expect(first.statuses).toEqual([...Array(10).fill('run'), ...Array(5).fill('refused')]);
      expect(first.window?.highest).toBe(9);
      await small.markDone(ref, range(0, 4));
      const second = await small.admit(ref, records(range(10, 14)));
      expect(second.statuses).toEqual(Array(5).fill('run'));
    });
  });

  describe('memory', () => {
    const WINDOW = 1_000_000;
    async function partitionBytes(r: PartitionRef): Promise<number> {
      const keys = partitionKeys(r);
      let bytes = 0;
      for (const key of [keys.bits, keys.meta, keys.lanes]) bytes += (await redis.memory('USAGE', key)) ?? 0;
      return bytes;
    }

    // Offset 0 is never done, so the frontier cannot move and the whole window stays in Redis.
    it.each([
      {
        shape: 'admitted first, then marked 10,000 at a time',
        build: async (big: CompletionStore, r: PartitionRef) => {
          for (let from = 0; from < WINDOW; from += 10_000) await big.admit(r, records(range(from, from + 9_999)));
          for (let from = 1; from < WINDOW; from += 10_000) await big.markDone(r, range(from, Math.min(from + 9_999, WINDOW - 1)));
        },
      },
      {
        shape: 'admitted and marked in turns, 1,000 at a time',
        build: async (big: CompletionStore, r: PartitionRef) => {
          for (let from = 0; from < WINDOW; from += 1_000) {
            await big.admit(r, records(range(from, from + 999)));
            await big.markDone(r, range(Math.max(from, 1), from + 999));
          }
        },
      },
      {
        shape: 'delivered with every hundredth offset missing (bridged at admission)',
        build: async (big: CompletionStore, r: PartitionRef) => {
          for (let from = 0; from < WINDOW; from += 10_000) {
            const delivered = range(from, from + 9_999).filter((o) => o % 100 !== 50);
            await big.admit(r, records(delivered));
            await big.markDone(r, delivered.filter((o) => o > 0));
          }
        },
      },
    ])('keeps a 1,000,000-offset window of one partition within 135 KB of Redis: $shape', async ({ build }) => {
      const big = new CompletionStore(redis, { maxWindow: WINDOW + 1, maxParked: 1 });

      await build(big, ref);

      expect(await big.frontier(ref, { trim: true })).toMatchObject({ frontier: 0, highest: WINDOW - 1 });
      expect(await partitionBytes(ref)).toBeLessThanOrEqual(135_000);
      await redis.del(partitionKeys(ref).bits, partitionKeys(ref).meta);
    });
  });

  describe('lanes: block, park, release', () => {
    it('parks later records of a blocked lane and sets their done bits atomically', async () => {
      await store.admit(ref, [
        { offset: 0, lane: 'A', payload: 'a0' },
        { offset: 1, lane: 'B', payload: 'b1' },
      ]);
      expect(await store.block(ref, { head: { lane: 'A', offset: 0, attempt: 2, state: 'retrying' } })).toBe(0);
      const next = await store.admit(ref, [
        { offset: 2, lane: 'A', payload: 'a2' },
        { offset: 3, lane: 'B', payload: 'b3' },
        { offset: 4, lane: 'A', payload: 'a4' },
      ]);
      expect(next.statuses).toEqual(['parked', 'run', 'parked']);
      await store.markDone(ref, [0, 1, 3]);
      expect((await store.frontier(ref))?.frontier).toBe(5);
      expect(await store.release(ref, { lane: 'A', headOffset: 0 })).toEqual({ offset: 2, payload: 'a2' });
      expect(await store.release(ref, { lane: 'A', headOffset: 2 })).toEqual({ offset: 4, payload: 'a4' });
      expect(await store.release(ref, { lane: 'A', headOffset: 4 })).toBeUndefined();
      expect((await store.admit(ref, [{ offset: 5, lane: 'A', payload: 'a5' }])).statuses).toEqual(['run']);
    });

    it('finds the blocked lanes among thousands of lanes in one batch', async () => {
      // Two blocked lanes, one named early in the batch and one past its first thousand lanes.
      await store.admit(ref, [
        { offset: 0, lane: 'lane-3', payload: 'x' },
        { offset: 1, lane: 'lane-2500', payload: 'y' },
      ]);
      await store.block(ref, { head: { lane: 'lane-3', offset: 0, attempt: 2, state: 'retrying' } });
      await store.block(ref, { head: { lane: 'lane-2500', offset: 1, attempt: 2, state: 'retrying' } });
      const batch = range(0, 2_999).map((i) => ({ offset: 2 + i, lane: `lane-${i}`, payload: `p${i}` }));

      const result = await store.admit(ref, batch);

      const parked = batch.filter((_, i) => result.statuses[i] === 'parked').map((record) => record.lane);
      expect(parked).toEqual(['lane-3', 'lane-2500']);
      expect(result.statuses.filter((status) => status === 'run')).toHaveLength(2_998);
    });

    it('admits in one script call, and sends payloads in a second only when a lane is blocked', async () => {
      const scriptCalls = (): number => calls.filter((name) => name === 'evalsha' || name === 'eval').length;
      const calls: string[] = [];
      const send = redis.sendCommand.bind(redis) as (...args: unknown[]) => unknown;
      const spy = jest.spyOn(redis, 'sendCommand').mockImplementation(((...args: unknown[]) => {
        calls.push((args[0] as { name: string }).name);
        return send(...args);
      }) as never);
      try {
        const built: number[] = [];
        const lazy = (offset: number) => () => (built.push(offset), `p${offset}`);
        await store.admit(ref, [0, 1, 2].map((offset) => ({ offset, lane: 'L', payload: lazy(offset) })));
        expect(scriptCalls()).toBe(1);
        expect(built).toEqual([]);
        await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' } });
        calls.length = 0;
        const result = await store.admit(ref, [3, 4].map((offset) => ({ offset, lane: 'L', payload: lazy(offset) })));
        expect(result.statuses).toEqual(['parked', 'parked']);
        expect(scriptCalls()).toBe(2);
        expect(built).toEqual([3, 4]);
        expect(await redis.lrange(parkKey(ref, 'L'), 0, -1)).toEqual(['3:p3', '4:p4']);
      } finally {
        spy.mockRestore();
      }
    });

    it('hands a redelivered, not yet done head off again with its attempt', async () => {
      await store.admit(ref, [{ offset: 7, lane: 'K', payload: 'k7' }]);
      await store.block(ref, { head: { lane: 'K', offset: 7, attempt: 3, state: 'retrying' } });
      const redelivered = await store.admit(ref, [
        { offset: 7, lane: 'K', payload: 'k7' },
        { offset: 8, lane: 'K', payload: 'k8' },
      ]);
      expect(redelivered.statuses).toEqual(['handoff', 'parked']);
      expect(redelivered.handoffHeads).toMatchObject([{ offset: 7, attempt: 3, state: 'retrying' }]);
    });

    it('blocks idempotently on the same head, parks in block, and rejects another head', async () => {
      await store.admit(ref, records([0, 1, 2]).map((r) => ({ ...r, lane: 'L', payload: `p${r.offset}` })));
      const head = { lane: 'L', offset: 0, attempt: 2, state: 'retrying' as const };
      expect(await store.block(ref, { head, parked: [{ offset: 1, payload: 'p1' }, { offset: 2, payload: 'p2' }] })).toBe(2);
      expect(await store.block(ref, { head, parked: [{ offset: 1, payload: 'p1' }, { offset: 2, payload: 'p2' }] })).toBe(0);
      await expect(store.block(ref, { head: { ...head, offset: 1 } })).rejects.toBeInstanceOf(LaneConflictError);
      await store.markDone(ref, [0]);
      expect((await store.frontier(ref))?.frontier).toBe(3);
    });

    it('records a redelivered record below its lane head as done, never parking it behind later ones', async () => {
      await store.admit(ref, [0, 1, 2].map((offset) => ({ offset, lane: 'L', payload: `p${offset}` })));
      // 0 ran but its done bit was lost (a failed flush); 1 failed and blocked the lane; 2 was parked.
      await store.block(ref, { head: { lane: 'L', offset: 1, attempt: 2, state: 'retrying' }, parked: [{ offset: 2, payload: 'p2' }] });

      const again = await store.admit(ref, [0, 1, 2].map((offset) => ({ offset, lane: 'L', payload: `p${offset}` })));

      expect(again.statuses).toEqual(['duplicate', 'handoff', 'duplicate']);
      expect(await redis.lrange(parkKey(ref, 'L'), 0, -1)).toEqual(['2:p2']);
      expect((await store.frontier(ref))?.frontier).toBe(1);
    });

    it('sets the released head\'s done bit in the release itself', async () => {
      await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }, { offset: 1 }]);
      await store.markDone(ref, [1]);
      await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' } });
      expect((await store.frontier(ref))?.frontier).toBe(0);

      await store.release(ref, { lane: 'L', headOffset: 0 });

      expect((await store.frontier(ref))?.frontier).toBe(2);
      expect((await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }])).statuses).toEqual(['duplicate']);
    });

    it('lets one copy of a head claim it at a time: the same copy again, another once the claim ends or the head moves', async () => {
      await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }, { offset: 1, lane: 'L', payload: 'p1' }]);
      await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' }, parked: [{ offset: 1, payload: 'p1' }] });
      const head = { offset: 0, attempt: 2 };
      const a = { copy: 'g.retry.1m:0:7', nowMs: 1_000, untilMs: 5_000 };
      const b = { copy: 'g.retry.1s:0:3', nowMs: 1_000, untilMs: 5_000 };

      expect(await store.claimHead(ref, 'L', head, a)).toEqual({ status: 'claimed' });
      expect(await store.claimHead(ref, 'L', head, b)).toEqual({ status: 'claimed-elsewhere', untilMs: 5_000 });
      // The same copy, redelivered after its invocation died, takes its claim back.
      expect(await store.claimHead(ref, 'L', head, { ...a, nowMs: 2_000 })).toEqual({ status: 'claimed' });
      // The claim is invisible to every other reader of the entry.
      expect(await store.laneHead(ref, 'L')).toMatchObject({ offset: 0, attempt: 2, state: 'retrying', leaseUntilMs: 0 });
      // Once it ends, another copy takes over.
      expect(await store.claimHead(ref, 'L', head, { ...b, nowMs: 5_001 })).toEqual({ status: 'claimed' });

      // Another attempt, or a stale copy after the head moved: not the head.
      expect(await store.claimHead(ref, 'L', { offset: 0, attempt: 1 }, a)).toMatchObject({ status: 'not-head', head: { offset: 0, attempt: 2 } });
      await store.advance(ref, 'L', head, { attempt: 3, state: 'retrying', dueAtMs: 9_000, leaseUntilMs: 0 });
      // Moving the head dropped the claim: the next attempt's copy claims it at once.
      expect(await store.claimHead(ref, 'L', { offset: 0, attempt: 3 }, a)).toEqual({ status: 'claimed' });
      expect(await store.release(ref, { lane: 'L', headOffset: 0 })).toEqual({ offset: 1, payload: 'p1' });
      expect(await store.claimHead(ref, 'L', head, b)).toMatchObject({ status: 'not-head', head: { offset: 1, attempt: 1 } });
      expect(await store.release(ref, { lane: 'L', headOffset: 1 })).toBeUndefined();
      expect(await store.claimHead(ref, 'L', { offset: 1, attempt: 1 }, b)).toEqual({ status: 'not-head', head: undefined });
    });

    it('never lets a copy claim a held head', async () => {
      await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }]);
      await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 3, state: 'held', reason: 'non-retriable' } });
      expect(await store.claimHead(ref, 'L', { offset: 0, attempt: 3 }, { copy: 't:0:1', nowMs: 1, untilMs: 2 })).toMatchObject({ status: 'not-head', head: { state: 'held' } });
    });

    it('makes a duplicated release a no-op', async () => {
      await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }]);
      await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' } });
      expect(await store.release(ref, { lane: 'L', headOffset: 0 })).toBeUndefined();
      await expect(store.release(ref, { lane: 'L', headOffset: 0 })).rejects.toBeInstanceOf(NotHeadError);
    });

    it('refuses records over the parked bytes cap, and counts bytes back down as the lane is released', async () => {
      const small = new CompletionStore(redis, { maxParkedBytes: 10 });
      await small.admit(ref, [{ offset: 0, lane: 'H', payload: 'h0' }]);
      await small.block(ref, { head: { lane: 'H', offset: 0, attempt: 2, state: 'retrying' } });
      const result = await small.admit(ref, [
        { offset: 1, lane: 'H', payload: '12345' },
        { offset: 2, lane: 'H', payload: '67890' },
        { offset: 3, lane: 'H', payload: 'x' },
      ]);
      expect(result.statuses).toEqual(['parked', 'parked', 'refused']);
      expect(await redis.hget(partitionKeys(ref).meta, 'parkedBytes')).toBe('10');
      // Offset 1 becomes the head but keeps its place (and bytes) until the lane is released past it.
      await small.release(ref, { lane: 'H', headOffset: 0 });
      expect(await redis.hget(partitionKeys(ref).meta, 'parkedBytes')).toBe('10');
      await small.release(ref, { lane: 'H', headOffset: 1 });
      expect(await redis.hget(partitionKeys(ref).meta, 'parkedBytes')).toBe('5');
      expect((await small.admit(ref, [{ offset: 3, lane: 'H', payload: 'x' }])).statuses).toEqual(['parked']);
    });

    it('never parks a lane record ahead of an earlier one refused at a cap', async () => {
      const small = new CompletionStore(redis, { maxParkedBytes: 100 });
      await small.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }]);
      await small.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' } });
      const result = await small.admit(ref, [
        { offset: 1, lane: 'L', payload: 'x'.repeat(200) },
        { offset: 2, lane: 'L', payload: 'small' },
        { offset: 3, lane: 'M', payload: 'other lane' },
      ]);
      expect(result.statuses).toEqual(['refused', 'refused', 'run']);
      expect(await redis.llen(parkKey(ref, 'L'))).toBe(0);
    });

    it('keeps a released head in Redis until the lane is released past it, so a crash cannot lose it', async () => {
      await store.admit(ref, [{ offset: 0, lane: 'L', payload: 'p0' }]);
      await store.block(ref, { head: { lane: 'L', offset: 0, attempt: 2, state: 'retrying' } });
      await store.admit(ref, [{ offset: 1, lane: 'L', payload: 'p1' }, { offset: 2, lane: 'L', payload: 'p2' }]);
      await store.markDone(ref, [0]);

      expect(await store.release(ref, { lane: 'L', headOffset: 0, nextAttempt: 1, nowMs: 5_000 })).toEqual({ offset: 1, payload: 'p1' });

      // The retry function dies here: offset 1 is the head, and its record is still in Redis.
      expect(await redis.lrange(parkKey(ref, 'L'), 0, -1)).toEqual(['1:p1', '2:p2']);
      expect(await redis.hget(partitionKeys(ref).lanes, 'L')).toBe('1|1|retrying|5000|5000|');
      expect(await store.release(ref, { lane: 'L', headOffset: 1 })).toEqual({ offset: 2, payload: 'p2' });
      expect(await redis.lrange(parkKey(ref, 'L'), 0, -1)).toEqual(['2:p2']);
    });

    it('refuses records over the parked cap instead of dropping them', async () => {
      const small = new CompletionStore(redis, { maxWindow: 1000, maxParked: 2 });
      await small.admit(ref, [{ offset: 0, lane: 'H', payload: 'h0' }]);
      await small.block(ref, { head: { lane: 'H', offset: 0, attempt: 2, state: 'retrying' } });
      const result = await small.admit(ref, range(1, 4).map((offset) => ({ offset, lane: 'H', payload: `h${offset}` })));
      expect(result.statuses).toEqual(['parked', 'parked', 'refused', 'refused']);
      expect(result.backPressure).toBe(true);
    });
  });

  describe('epoch fencing', () => {
    it('changes nothing for a caller with a stale epoch', async () => {
      await store.admit(ref, records([0, 1, 2]), 5);
      await expect(store.markDone(ref, [0], 4)).rejects.toBeInstanceOf(StaleEpochError);
      await expect(store.admit(ref, records([3]), 4)).rejects.toBeInstanceOf(StaleEpochError);
      await expect(
        store.block(ref, { head: { lane: 'x', offset: 1, attempt: 1, state: 'retrying' }, parked: [], epoch: 4 }),
      ).rejects.toBeInstanceOf(StaleEpochError);
      expect(await store.frontier(ref)).toMatchObject({ frontier: 0, highest: 2 });
      await store.markDone(ref, [0], 6);
      await expect(store.markDone(ref, [1], 5)).rejects.toBeInstanceOf(StaleEpochError);
      expect((await store.frontier(ref))?.frontier).toBe(1);
    });
  });

  it('keeps the frontier exact while several clients mark and one trims concurrently', async () => {
    const total = 4000;
    await store.admit(ref, records(range(0, total - 1)));
    const shuffled = range(0, total - 1).sort(() => Math.random() - 0.5);
    const clients = [0, 1, 2, 3].map(() => connect());
    try {
      const stores = clients.map((client) => new CompletionStore(client));
      let trimming = true;
      const trimmer = (async () => {
        const seen: number[] = [];
        while (trimming) seen.push((await store.frontier(ref, { trim: true }))!.frontier);
        return seen;
      })();
      await Promise.all(
        stores.map(async (s, i) => {
          const mine = shuffled.filter((_, k) => k % stores.length === i);
          for (let k = 0; k < mine.length; k += 50) await s.markDone(ref, mine.slice(k, k + 50));
        }),
      );
      trimming = false;
      const seen = await trimmer;
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(await store.frontier(ref, { trim: true })).toMatchObject({ frontier: total, base: total });
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
  });

  it('agrees with a plain in-memory model over random admit / mark / trim / frontier sequences', async () => {
    const maxWindow = 64;
    const command = fc.oneof(
      fc.record({ op: fc.constant('admit' as const), from: fc.nat(200), count: fc.integer({ min: 1, max: 20 }), step: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ op: fc.constant('mark' as const), picks: fc.array(fc.nat(300), { maxLength: 20 }) }),
      fc.record({ op: fc.constant('trim' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 25 }), async (commands) => {
        const model = new CompletionModel(maxWindow);
        const engine = new CompletionStore(redis, { maxWindow, maxParked: 10 });
        const partitionRef = { ...ref, partition: Math.floor(Math.random() * 1e9) };
        let highest = -1;
        for (const c of commands) {
          if (c.op === 'admit') {
            const offsets = Array.from({ length: c.count }, (_, i) => c.from + i * c.step);
            const got = await engine.admit(partitionRef, records(offsets));
            expect(got.statuses).toEqual(model.admit(offsets));
            highest = model.admittedUpTo;
          } else if (c.op === 'mark') {
            const offsets = [...new Set(c.picks.filter((o) => o <= highest))];
            await engine.markDone(partitionRef, offsets);
            model.mark(offsets);
          } else {
            await engine.frontier(partitionRef, { trim: true });
            model.trim();
          }
          expect((await engine.frontier(partitionRef))?.frontier).toBe(model.frontier());
        }
      }),
      { numRuns: 100 },
    );
  });
});
