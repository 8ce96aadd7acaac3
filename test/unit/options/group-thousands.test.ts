import fc from 'fast-check';
import { groupThousands } from '../../../src/options/messages';

describe('groupThousands', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1_000, '1,000'],
    [10_000, '10,000'],
    [2_147_483_647, '2,147,483,647'],
    [Number.MAX_SAFE_INTEGER, '9,007,199,254,740,991'],
  ])('shows %d as %s', (value, shown) => {
    expect(groupThousands(value)).toBe(shown);
  });

  it("shows every safe non-negative integer as toLocaleString('en-US') does", () => {
    fc.assert(fc.property(fc.maxSafeNat(), (value) => groupThousands(value) === value.toLocaleString('en-US')));
  });
});
