import { describeLane } from '../../../src/admin';

const b64 = (bytes: Buffer | string): string => Buffer.from(bytes).toString('base64');

describe('describeLane', () => {
  it.each([
    [b64('customer-42'), 'customer-42'],
    [b64('kunde-ä-😀'), 'kunde-ä-😀'],
    [b64(Buffer.from([0xff, 0xfe, 0x00])), '(binary, 3 bytes)'],
    [b64('tab\there'), '(binary, 8 bytes)'],
    ['*', '(partition)'],
    ['~', '(null key)'],
    ['#abc', '(long key, hashed)'],
  ])('shows lane %s as %s', (lane, shown) => {
    expect(describeLane(lane)).toBe(shown);
  });
});
