import { UnexpectedReplyError } from '../../../src/completion/errors';
import { entryHeadOffset, parseLaneHead, parseLanesEntry } from '../../../src/completion/lanes-entry';

describe('parseLanesEntry', () => {
  it.each([
    ['a retrying head, no lease', '12|2|retrying|100|200|', { offset: 12, attempt: 2, state: 'retrying', sinceMs: 100, dueAtMs: 200, reason: '', leaseUntilMs: 0, claimCopy: '', claimUntilMs: 0 }],
    ['a held head with its reason', '7|3|held|100|150|fatal: no such order', { offset: 7, attempt: 3, state: 'held', sinceMs: 100, dueAtMs: 150, reason: 'fatal: no such order', leaseUntilMs: 0, claimCopy: '', claimUntilMs: 0 }],
    ['a drained head with a lease', '9|1|retrying|100|100||5000', { offset: 9, attempt: 1, state: 'retrying', sinceMs: 100, dueAtMs: 100, reason: '', leaseUntilMs: 5_000, claimCopy: '', claimUntilMs: 0 }],
    ['a claimed head, the lease field written empty', '4|2|retrying|10|20|||g.retry.1s:0:3|90', { offset: 4, attempt: 2, state: 'retrying', sinceMs: 10, dueAtMs: 20, reason: '', leaseUntilMs: 0, claimCopy: 'g.retry.1s:0:3', claimUntilMs: 90 }],
  ])('reads %s', (_name, entry, expected) => {
    expect(parseLanesEntry(entry, 'lane L')).toEqual(expected);
  });

  it.each([['no state', '12|2'], ['an unknown state', '12|2|parked|1|2|'], ['nothing', '']])('refuses an entry with %s, naming it', (_name, entry) => {
    expect(() => parseLanesEntry(entry, 'lane L')).toThrow(UnexpectedReplyError);
    expect(() => parseLanesEntry(entry, 'lane L')).toThrow(/lane L: malformed lane head/);
  });
});

describe('parseLaneHead', () => {
  it('reads an entry carrying a claim and no lease as a head without a lease, its lane id given', () => {
    expect(parseLaneHead('4|2|retrying|10|20|||g.retry.1s:0:3|90', 'h', 'L')).toEqual({ lane: 'L', offset: 4, attempt: 2, state: 'retrying', dueAtMs: 20, reason: '', leaseUntilMs: 0 });
  });
});

describe('entryHeadOffset', () => {
  it('reads the head offset alone, even of an entry the whole parser refuses, and nothing from an entry of another shape', () => {
    expect(entryHeadOffset('4|2|retrying|10|20|||g.retry.1s:0:3|90')).toBe(4);
    expect(entryHeadOffset('12|2|parked|1|2|')).toBe(12);
    expect(entryHeadOffset('x12|2|retrying')).toBeUndefined();
    expect(entryHeadOffset('12')).toBeUndefined();
  });
});
