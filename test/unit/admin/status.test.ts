import { escapeGlob, partitionKeysPattern, partitionOfKey, renderStatus, unescapeName, type GroupStatus } from '../../../src/admin';
import { escapeName, partitionKeys, parkKey } from '../../../src/completion';

describe('partitionOfKey', () => {
  it.each(['orders', 'a:b{c}%d', 'x'])('reads back every key of a partition of topic %s', (topic) => {
    const ref = { group: 'g:1', topic, partition: 12 };
    for (const key of [...Object.values(partitionKeys(ref)), parkKey(ref, 'lane:1')]) expect(partitionOfKey('g:1', key)).toEqual(ref);
  });

  it('ignores keys of another group and the group-level keys', () => {
    expect(partitionOfKey('g', '{kl:gg:orders:0}:meta')).toBeUndefined();
    expect(partitionOfKey('g', '{kl:g}:partitions')).toBeUndefined();
    expect(partitionOfKey('g', '{kl:g:orders:x}:meta')).toBeUndefined();
  });

  it('unescapes what escapeName escaped', () => {
    expect(unescapeName(escapeName('%{}:'))).toBe('%{}:');
  });
});

describe('partitionKeysPattern', () => {
  it('escapes glob characters of names', () => {
    expect(escapeGlob('a*b?[c]\\')).toBe('a\\*b\\?\\[c\\]\\\\');
    expect(partitionKeysPattern('g*')).toBe('{kl:g\\*:*:*}:*');
    expect(partitionKeysPattern('g', 't', 3)).toBe('{kl:g:t:3}:*');
    expect(partitionKeysPattern('g', 't')).toBe('{kl:g:t:*}:*');
  });
});

describe('renderStatus', () => {
  const base: GroupStatus = {
    group: 'g',
    completionGroup: 'g.lanes',
    readAtMs: 0,
    partitions: [],
    retryDepth: 0,
    deadLetters: 0,
    missingTopics: [],
  };

  it('aligns one row per partition and shows unknown values as -', () => {
    const text = renderStatus({
      ...base,
      partitions: [
        { topic: 'orders', partition: 0, role: 'source', committed: 4, frontier: 7, highest: 7, window: 1, endOffset: 10, startOffset: 0, lag: 6, blockedLanes: 1, heldLanes: 1, parked: 2, recoveries: 0, lastRecoveredAtMs: undefined, recovering: false },
        { topic: 'g.dlq', partition: 0, role: 'dead-letter', committed: undefined, frontier: undefined, highest: undefined, window: undefined, endOffset: 3, startOffset: 0, lag: 3, blockedLanes: 0, heldLanes: 0, parked: 0, recoveries: 0, lastRecoveredAtMs: undefined, recovering: false },
      ],
      deadLetters: 3,
    });
    expect(text.split('\n').slice(1, 4)).toEqual([
      'TOPIC   PART  ROLE         COMMITTED  FRONTIER  WINDOW  END  LAG  BLOCKED  HELD  PARKED',
      'orders  0     source       4          7         1       10   6    1        1     2',
      'g.dlq   0     dead-letter  -          -         -       3    3    0        0     0',
    ]);
    expect(text).toContain('blocked lanes 1 (held 1), parked 2, retry depth 0, dead letters 3');
    expect(text).not.toContain('recovered');
  });

  it('says which partitions were recovered from Kafka after Redis lost state, and which one is being recovered', () => {
    const row = { role: 'source', committed: 4, frontier: 7, highest: 7, window: 1, endOffset: 10, startOffset: 0, lag: 6, blockedLanes: 0, heldLanes: 0, parked: 0 } as const;
    const text = renderStatus({
      ...base,
      partitions: [
        { ...row, topic: 'orders', partition: 0, recoveries: 2, lastRecoveredAtMs: Date.UTC(2026, 0, 2, 3, 4, 5), recovering: false },
        { ...row, topic: 'orders', partition: 1, recoveries: 1, lastRecoveredAtMs: Date.UTC(2026, 0, 2, 6, 0, 0), recovering: true },
        { ...row, topic: 'orders', partition: 2, recoveries: 0, lastRecoveredAtMs: undefined, recovering: false },
        { ...row, topic: 'orders', partition: 3, recoveries: 1, lastRecoveredAtMs: undefined, recovering: false },
      ],
    });
    expect(text).toContain(
      'recovered from Kafka after Redis lost state: orders-0 2x (last at 2026-01-02T03:04:05.000Z), ' +
        'orders-1 1x (recovering now, last at 2026-01-02T06:00:00.000Z), orders-3 1x\n',
    );
  });

  it('says when there is nothing, and names topics missing from Kafka', () => {
    expect(renderStatus(base)).toContain('no partitions');
    expect(renderStatus({ ...base, missingTopics: ['old'] })).toContain('missing from Kafka: old (if one is created again, run `kafka-lanes reset`');
  });
});
