import { age, renderLanes, type StatusLane } from '../../../src/admin';

const lane = (overrides: Partial<StatusLane> = {}): StatusLane => ({
  topic: 'orders', partition: 0, lane: 'Yy0x', key: 'c-1', headOffset: 41, attempt: 5, state: 'held',
  sinceMs: 0, dueAtMs: 0, reason: 'non-retriable', parked: 2, ageMs: 723_000, ...overrides,
});

describe('renderLanes', () => {
  it('lists each lane with its id, key, place, attempt, parked records and age, aligned', () => {
    const lines = renderLanes({ total: 2, lanes: [lane(), lane({ lane: 'Yy0y', key: 'c-2', state: 'retrying', headOffset: 7, attempt: 2, parked: 0, ageMs: 4_200, reason: '' })] });
    expect(lines).toEqual([
      'blocked and held lanes (oldest first, 2 of 2):',
      'LANE  KEY  TOPIC   PART  STATE     HEAD  ATTEMPT  PARKED  AGE    REASON',
      'Yy0x  c-1  orders  0     held      41    5        2       12m3s  non-retriable',
      'Yy0y  c-2  orders  0     retrying  7     2        0       4s',
    ]);
  });

  it('says when more lanes exist than it lists, and nothing when there are none', () => {
    expect(renderLanes({ total: 3, lanes: [lane()] })[0]).toBe('blocked and held lanes (oldest first, 1 of 3; --lanes <n> lists more):');
    expect(renderLanes({ total: 0, lanes: [] })).toEqual([]);
  });
});

describe('age', () => {
  it.each([
    [0, '0ms'],
    [800, '800ms'],
    [45_000, '45s'],
    [723_000, '12m3s'],
    [3_600_000, '1h0m'],
    [90_061_000, '1d1h'],
  ])('%p ms reads %p', (ms, text) => {
    expect(age(ms)).toBe(text);
  });
});
