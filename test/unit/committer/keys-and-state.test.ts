import { committerLeaseKey, committerReadingsKey } from '../../../src/completion/keys';
import { completionGroupId } from '../../../src/options/names';
import { decodeReadings, encodeReadings } from '../../../src/committer/state';
import { CorruptStateError } from '../../../src/committer/errors';
import { trackedPartitionsKey } from '../../../src/completion/keys';

/** Redis Cluster hashes only what lies between the first `{` and the next `}`. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open + 1));
}

describe('committer key names', () => {
  it('puts the lease and the readings under the group tag of the tracked-partitions set', () => {
    expect(committerLeaseKey('orders')).toBe('{kl:orders}:committer');
    expect(committerReadingsKey('orders')).toBe('{kl:orders}:committer:readings');
    expect(hashTagOf(committerLeaseKey('orders'))).toBe(hashTagOf(trackedPartitionsKey('orders')));
  });

  it.each(['g{1}', 'g}x', 'a:b', '100%'])('escapes %p so the tag cannot end early or collide', (group) => {
    const key = committerLeaseKey(group);
    expect(hashTagOf(key)).toBe(hashTagOf(committerReadingsKey(group)));
    expect(key.endsWith('}:committer')).toBe(true);
    expect(key.slice(1, key.lastIndexOf('}'))).not.toMatch(/[{}]/);
    expect(committerLeaseKey(`${group}x`)).not.toBe(key);
  });

  it('names the completion group <group>.lanes', () => {
    expect(completionGroupId('orders')).toBe('orders.lanes');
  });
});

describe('committer readings state', () => {
  const readings = [
    { topic: 'orders', partition: 0, frontier: 42, highest: 90, sinceMs: 1_700_000_000_000 },
    { topic: 'orders.retry.5s', partition: 11, frontier: 0, highest: -1, sinceMs: 5 },
  ];

  it('round-trips through the hash encoding', () => {
    const hash = encodeReadings(readings);
    expect(hash).toEqual({ 'orders\n0': '42:90:1700000000000', 'orders.retry.5s\n11': '0:-1:5' });
    expect(decodeReadings(hash, 'k')).toEqual(readings);
  });

  it.each([
    ['a field without a partition', { orders: '1:2:3' }],
    ['a non-numeric partition', { 'orders\nx': '1:2:3' }],
    ['too few numbers', { 'orders\n0': '1:2' }],
    ['a non-numeric value', { 'orders\n0': '1:two:3' }],
  ])('rejects %s as corrupt state', (_, hash) => {
    expect(() => decodeReadings(hash, 'key')).toThrow(CorruptStateError);
  });
});
