import fc from 'fast-check';
import { bufferToSignedBytes, decodeBase64, encodeBase64, isBase64, signedBytesToBuffer } from '../../../src/event';
import { isCanonicalBase64 } from '../../../src/event/bytes';

describe('signed bytes', () => {
  it('turns [-61, -85] into the UTF-8 bytes of ë and back', () => {
    // Act
    const bytes = signedBytesToBuffer([-61, -85]);

    // Assess
    expect(bytes).toEqual(Buffer.from([0xc3, 0xab]));
    expect(bytes.toString('utf8')).toBe('ë');
    expect(bufferToSignedBytes(Buffer.from('ë', 'utf8'))).toEqual([-61, -85]);
  });

  it('maps every byte value both ways', () => {
    // Prepare
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

    // Act
    const signed = bufferToSignedBytes(all);

    // Assess
    expect(Math.min(...signed)).toBe(-128);
    expect(Math.max(...signed)).toBe(127);
    expect(signedBytesToBuffer(signed)).toEqual(all);
  });

  it('reads only the view of a Buffer that shares a larger pool', () => {
    // Prepare
    const view = Buffer.from([1, 2, 255, 4]).subarray(1, 3);

    // Act
    const signed = bufferToSignedBytes(view);

    // Assess
    expect(signed).toEqual([2, -1]);
  });

  it.each([[[128]], [[-129]], [[0.5]]])('throws a RangeError for %p', (bytes) => {
    // Act
    const act = () => signedBytesToBuffer(bytes);

    // Assess
    expect(act).toThrow(RangeError);
    expect(act).toThrow('Expected `bytes[0]` to be a signed byte (-128..127)');
  });
});

describe('base64', () => {
  it.each([
    ['', ''],
    ['YQ==', 'a'],
    ['YWI=', 'ab'],
    ['cmVjb3JkS2V5', 'recordKey'],
  ])('decodes %p', (text, decoded) => {
    // Act
    const bytes = decodeBase64(text);

    // Assess
    expect(bytes?.toString('utf8')).toBe(decoded);
    expect(encodeBase64(Buffer.from(decoded))).toBe(text);
  });

  it.each([['YQ'], ['YQ='], ['Y Q=='], ['YQ==\n'], ['a-_b'], ['not base64!'], ['====']])('refuses %p', (text) => {
    // Act
    const bytes = decodeBase64(text);

    // Assess
    expect(bytes).toBeUndefined();
  });

  it.each([['-_8='], ['YQ=a'], ['Y===']])('refuses URL-safe or misplaced padding %p', (text) => {
    expect(isBase64(text)).toBe(false);
  });

  it('tells canonical base64 (the text its bytes encode to) from text with padding bits set', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
      expect(isCanonicalBase64(encodeBase64(bytes))).toBe(true);
    }));
    for (const text of ['YR==', 'YWJ=', 'YQ==', 'YWI=', 'cmVjb3JkS2V5', '']) {
      expect(isCanonicalBase64(text)).toBe(encodeBase64(decodeBase64(text)!) === text);
    }
  });

  it('decodes values up to the 6 MB Lambda payload in linear time, without overflowing the stack', () => {
    // Prepare: 4.5 MB of base64 broke the regular expression this check used to be; 6 MB is the event limit.
    for (const size of [3_400_000, 4_500_000]) {
      const bytes = Buffer.alloc(size, 0xab);
      const text = encodeBase64(bytes);

      // Act
      const decoded = decodeBase64(text);

      // Assess
      expect(decoded?.equals(bytes)).toBe(true);
    }
    expect(decodeBase64(`${'A'.repeat(6 * 1024 * 1024 - 4)}A=A=`)).toBeUndefined();
  });

  it('accepts exactly what a strict padded base64 grammar accepts', () => {
    const strict = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
    const text = fc.oneof(
      fc.string({ unit: fc.constantFrom(...'AZaz09+/=-_ \n!é'.split('')), maxLength: 16 }),
      fc.uint8Array({ maxLength: 16 }).map((bytes) => encodeBase64(bytes)),
      fc.uint8Array({ maxLength: 16 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
    );
    fc.assert(fc.property(text, (candidate) => expect(isBase64(candidate)).toBe(strict.test(candidate))), { numRuns: 2000 });
  });
});
