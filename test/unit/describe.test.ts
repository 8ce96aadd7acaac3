import fc from 'fast-check';
import { boundedText, clip, isObject, jsonText, messageOf, thrownText } from '../../src/describe';
import { describeValue } from '../../src/errors';
import { describeError } from '../../src/lanes/outcome';

/** An array nested `depth` levels deep around `inner`, built without recursion. */
function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

function nestedObject(depth: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < depth; i += 1) value = { x: value };
  return value;
}

describe('boundedText', () => {
  it('is JSON.stringify for small JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        const json = JSON.stringify(value);
        fc.pre(json.length <= 200);
        expect(boundedText(value, { maxLength: 1000, maxDepth: 10 })).toBe(json);
      }),
      { numRuns: 500 },
    );
  });

  it('stops at the depth and length it is given', () => {
    expect(boundedText(nested(5), { maxDepth: 2 })).toBe('[[[…]]]');
    expect(boundedText('x'.repeat(10_000), { maxLength: 10 }).length).toBe(13);
    expect(boundedText(Array.from({ length: 100_000 }, () => 1), { maxLength: 50 }).length).toBeLessThan(60);
  });

  it('shows bytes by size and calls no getter', () => {
    const value = { data: Buffer.alloc(3), get boom(): never { throw new Error('getter ran'); } };
    expect(boundedText(value)).toBe('{"data":<Buffer 3 bytes>,"boom":[getter]}');
  });

  it('never throws, for a revoked Proxy either', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => boundedText(proxy)).not.toThrow();
    expect(() => describeValue(proxy)).not.toThrow();
  });
});

describe('describeValue', () => {
  it.each([
    ['20,000 nested arrays', nested(20_000)],
    ['20,000 nested objects', nestedObject(20_000)],
    ['a header byte array with deep junk', [1, 2, nested(20_000)]],
    ['a million elements', Array.from({ length: 1_000_000 }, () => 'x')],
  ])('describes %s in at most 80 characters without overflowing the stack', (_case, value) => {
    // Act
    const described = describeValue(value);

    // Assess
    expect(described).toMatch(/^`.{0,80}` \((array|object)\)$/s);
  });

  it('keeps the p-limit style for ordinary values', () => {
    expect(describeValue(0)).toBe('`0` (number)');
    expect(describeValue('a b')).toBe('`a b` (string)');
    expect(describeValue(null)).toBe('`null` (null)');
    expect(describeValue({ a: 1 })).toBe('`{"a":1}` (object)');
    expect(describeValue(NaN)).toBe('`NaN` (number)');
  });
});

describe('describeError, thrownText', () => {
  it('describes a deep array thrown, in bounded length', () => {
    const described = describeError(nested(20_000));
    expect(described.name).toBe('object');
    expect(described.message.length).toBeLessThanOrEqual(4_000);
  });

  it('cuts a huge message', () => {
    expect(describeError(new Error('x'.repeat(100_000))).message.length).toBe(4_000);
    expect(thrownText('x'.repeat(100), 10)).toBe('xxxxxxx...');
  });

  it('survives an Error whose name and message are getters that throw', () => {
    const error = new Error('hidden');
    Object.defineProperty(error, 'message', { get: () => { throw new Error('no'); } });
    expect(() => describeError(error)).not.toThrow();
  });
});

describe('jsonText', () => {
  it('is JSON.stringify for any JSON value', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => expect(jsonText(value)).toBe(JSON.stringify(value))), { numRuns: 300 });
  });

  it('writes JSON nested 20,000 levels deep in full, parsable back to the same value', () => {
    // Prepare
    const deep = { offset: 1, extra: nestedObject(20_000), list: nested(20_000, 'leaf') };

    // Act
    const text = jsonText(deep);

    // Assess: V8's JSON.parse is iterative, so the round trip works where JSON.stringify overflows
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(text.startsWith('{"offset":1,"extra":{"x":{"x":')).toBe(true);
    expect(text.endsWith('"leaf"' + ']'.repeat(20_000) + '}')).toBe(true);
    expect(jsonText(JSON.parse(text))).toBe(text);
  });

  it('never throws on what JSON cannot hold', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => jsonText(cyclic)).not.toThrow();
    expect(jsonText(10n)).toBe('10n');
    expect(jsonText(undefined)).toBe('undefined');
    expect(clip('abcdef', 5)).toBe('ab...');
  });
});

describe('isObject', () => {
  it('is true for an object with keys, false for null, arrays and every other value', () => {
    expect([{}, { a: 1 }, Object.create(null), new Date(0)].map(isObject)).toEqual([true, true, true, true]);
    expect([null, undefined, [], [1], 'x', 1, true, () => 1].map(isObject)).toEqual([false, false, false, false, false, false, false, false]);
  });
});

describe('messageOf', () => {
  it("is an error's message, an error-like object's message (another realm's error), and String() of anything else", () => {
    expect(messageOf(new TypeError('x is undefined'))).toBe('x is undefined');
    expect(messageOf({ name: 'Error', message: 'from a sandbox' })).toBe('from a sandbox');
    expect(messageOf('timeout')).toBe('timeout');
    expect(messageOf(42)).toBe('42');
    expect(messageOf({ message: 7 })).toBe('[object Object]');
  });
});
