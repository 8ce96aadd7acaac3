/**
 * Issue 46, classified: after Redis lost a lane's entry, a retry head ran with `ctx.attempt` 1 while the record it was
 * given carried a retry copy's headers naming a later attempt. Not a loss: the retry path keeps the head's copy first
 * in the lane's park list while it writes the head's next copy (`advance` with a lease, the re-drive's payload); with
 * the lane's entry gone, a later record of the lane runs ahead (the documented window before the loss is found), and
 * when the lane is released past that record, the release drains the kept copy as the lane's next head at attempt 1,
 * as a recovery's rebuilt heads restart their attempts (docs/durability.md, "What a loss does to a lane").
 */
import { readHandOffHeaders } from '../../../src/handoff';
import { engineRig, laneOf, RIG_REF, sourceRecord } from '../../support/engine-rig';

describe("a head the retry path kept in Redis, after its lane's entry was lost", () => {
  it('runs again from attempt 1 when its lane is drained onto it: every record runs to success, nothing is lost', async () => {
    // Prepare: record 0 of key a fails its first two runs; record 2 (the same key) its first.
    const runs: string[] = [];
    const failuresLeft = new Map([[0, 2], [2, 1]]);
    const r = engineRig({}, (record, ctx) => {
      const left = failuresLeft.get(record.origin.offset) ?? 0;
      failuresLeft.set(record.origin.offset, left - 1);
      runs.push(`${record.origin.offset} attempt ${ctx.attempt} header ${readHandOffHeaders(record.headers).attempt ?? '-'}${left > 0 ? ' failed' : ''}`);
      if (left > 0) throw new Error('down');
    });
    await r.deliver([sourceRecord(0, 'a'), sourceRecord(1, 'a')]);
    await r.redeliver(r.sink.take());
    // The retry path kept record 0's copy (attempt 2) first in the park list while writing its attempt-3 copy.
    expect(r.store.partition(RIG_REF).park.get(laneOf('a'))?.map((parked) => parked.offset)).toEqual([0, 1]);
    const attempt3 = r.sink.take();

    // Act: Redis loses the lane's entry; record 2 arrives, runs ahead, fails once; its copy succeeds and releases the lane.
    r.store.partition(RIG_REF).lanes.delete(laneOf('a'));
    await r.deliver([sourceRecord(2, 'a')]);
    await r.redeliver(r.sink.take());

    // Assess: the release drained the kept copy of record 0 as the lane's head at attempt 1 (its headers name the
    // attempt the copy ran as), then record 1; every record succeeded, the lane is free.
    expect(runs).toEqual([
      '0 attempt 1 header - failed',
      '0 attempt 2 header 2 failed',
      '2 attempt 1 header - failed',
      '2 attempt 2 header 2',
      '0 attempt 1 header 2',
      '1 attempt 1 header -',
    ]);
    expect(r.store.partition(RIG_REF).lanes.size).toBe(0);
    expect(r.store.partition(RIG_REF).model.frontier()).toBe(3);
    // The attempt-3 copy of record 0, read later, finds its lane free and its origin done: dropped as stale.
    await r.redeliver(attempt3);
    expect(runs).toHaveLength(6);
  });
});
