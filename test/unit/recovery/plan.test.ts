import { planRebuild, recoveryRange } from '../../../src/recovery/plan';
import { parkPayload } from '../../../src/lanes/lane-heads';
import { record } from '../../support/fake-scope';

const laneOfKey = (r: { key: Buffer | null }): string | undefined => (r.key === null || r.key.toString() === '' ? undefined : r.key.toString());

describe('recoveryRange', () => {
  it('starts at the durable frontier and rebuilds a source partition to its end, born there', () => {
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: false })).toEqual({ start: 20, highest: 39, born: 20, read: true });
  });

  it('starts at the earliest offset when nothing was committed, or when the frontier lies beyond the end (the topic made again)', () => {
    expect(recoveryRange({ from: undefined, low: 5, end: 40, retryTopic: false }).start).toBe(5);
    expect(recoveryRange({ from: 90, low: 0, end: 40, retryTopic: false }).start).toBe(0);
    expect(recoveryRange({ from: 2, low: 5, end: 40, retryTopic: false }).start).toBe(5);
  });

  it('is born at the lower of since and the start', () => {
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: false, since: 10 }).born).toBe(10);
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: false, since: 30 }).born).toBe(20);
  });

  it('reads nothing of a retry topic and rebuilds it up to where its event source committed, within the range', () => {
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: true, delivered: 30 })).toEqual({ start: 20, highest: 29, born: 20, read: false });
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: true, delivered: 99 }).highest).toBe(39);
    expect(recoveryRange({ from: 20, low: 0, end: 40, retryTopic: true }).highest).toBe(19);
  });
});

describe('planRebuild', () => {
  it('makes each lane\'s first record its head and parks the rest behind it, records without a lane on their own', () => {
    const records = [record(20, 'a'), record(21, 'b'), record(22, ''), record(23, 'a')];
    const plan = planRebuild(records, { start: 20, highest: 23 }, laneOfKey);
    expect(plan.lanes).toBe(2);
    expect([...plan.heads].map(([lane, r]) => [lane, r.offset])).toEqual([['a', 20], ['b', 21]]);
    expect(plan.independent.map((r) => r.offset)).toEqual([22]);
    expect(plan.chunks).toEqual([{
      from: 20, to: 23, lanes: ['a', 'b'],
      records: [
        { offset: 20, lane: 1, payload: parkPayload(records[0]!) },
        { offset: 21, lane: 2, payload: parkPayload(records[1]!) },
        { offset: 22, lane: 0, payload: '' },
        { offset: 23, lane: 1, payload: parkPayload(records[3]!) },
      ],
    }]);
  });

  it('cuts the records into chunks that cover the range whole, each naming its own lanes, the last reaching the highest', () => {
    const records = [record(10, 'a'), record(11, 'b'), record(13, 'a'), record(14, 'c'), record(15, 'a')];
    const plan = planRebuild(records, { start: 10, highest: 17 }, laneOfKey, 2);
    expect(plan.chunks.map(({ from, to, lanes }) => ({ from, to, lanes }))).toEqual([
      { from: 10, to: 11, lanes: ['a', 'b'] },
      { from: 12, to: 14, lanes: ['a', 'c'] },
      { from: 15, to: 17, lanes: ['a'] },
    ]);
    expect(plan.chunks[1]!.records.map((r) => [r.offset, r.lane])).toEqual([[13, 1], [14, 2]]);
    expect([...plan.heads.keys()]).toEqual(['a', 'b', 'c']);
  });

  it('covers a range with no record left (transaction markers, a retry topic) in one call of no records', () => {
    expect(planRebuild([], { start: 20, highest: 24 }, laneOfKey).chunks).toEqual([{ from: 20, to: 24, lanes: [], records: [] }]);
    expect(planRebuild([], { start: 20, highest: 19 }, laneOfKey).chunks).toEqual([]);
  });
});
