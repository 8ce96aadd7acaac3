import { LanesError } from '../../../src/errors';
import { DeserializationError, deserialize, deserializeKey, deserializeValue } from '../../../src/options';
import type { Deserializer } from '../../../src/options';
import { kafkaRecord } from './factories';

const record = kafkaRecord({ topic: 'orders-eu', partition: 3, offset: 42 });

/** The error `act` throws, checked to be a DeserializationError. */
function deserializationError(act: () => unknown): DeserializationError {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(DeserializationError);
    return error as DeserializationError;
  }
  throw new Error('expected a DeserializationError, nothing was thrown');
}

describe('deserialize', () => {
  it.each([
    ['json', Buffer.from('{"id":1,"items":["a"]}'), { id: 1, items: ['a'] }],
    ['json', Buffer.from('"text"'), 'text'],
    ['json', Buffer.from(' 42 '), 42],
    ['json', Buffer.from('null'), null],
    ['json', Buffer.from('\u{feff}{"bom":true}'), { bom: true }],
    ['json', null, null],
    ['string', Buffer.from('customer-1'), 'customer-1'],
    ['string', Buffer.from('ë€😀'), 'ë€😀'],
    ['string', Buffer.alloc(0), ''],
    ['string', null, null],
    ['raw', null, null],
  ] as const)('%s turns %p into %p', (which, bytes, expected) => {
    // Act
    const value = deserialize(which, bytes, record, 'value');

    // Assess
    expect(value).toEqual(expected);
  });

  it('raw gives the very Buffer it was handed', () => {
    // Prepare
    const bytes = Buffer.from([0, 255, 128]);

    // Act
    const value = deserialize('raw', bytes, record, 'value');

    // Assess
    expect(value).toBe(bytes);
  });

  it('calls a function deserializer with the bytes and the record', () => {
    // Prepare
    const fn = jest.fn((bytes: Buffer | null) => bytes?.readUInt8(0));

    // Act
    const value = deserialize(fn, Buffer.from([7]), record, 'key');

    // Assess
    expect(value).toBe(7);
    expect(fn).toHaveBeenCalledWith(Buffer.from([7]), record);
  });

  it('reads the key and the value of the record', () => {
    // Prepare
    const withBoth = kafkaRecord({ key: Buffer.from('k-1'), value: Buffer.from('[1,2]') });

    // Act
    const key = deserializeKey('string', withBoth);
    const value = deserializeValue('json', withBoth);

    // Assess
    expect(key).toBe('k-1');
    expect(value).toEqual([1, 2]);
  });

  describe.each(['key', 'value'] as const)('failures of the %s', (part) => {
    it.each([
      ['json', Buffer.from('{"id":'), 'not JSON'],
      ['json', Buffer.alloc(0), 'not JSON'],
      ['json', Buffer.from([0x7b, 0xff, 0x7d]), '3 bytes are not valid UTF-8 (json deserializer)'],
      ['string', Buffer.from([0xc3, 0x28]), '2 bytes are not valid UTF-8 (string deserializer)'],
    ] as const)('%s of %p throws a non-retriable DeserializationError: %s', (which, bytes, detail) => {
      // Act
      const error = deserializationError(() => deserialize(which, bytes, record, part));

      // Assess
      expect(error).toBeInstanceOf(LanesError);
      expect(error.retriable).toBe(false);
      expect(error.name).toBe('DeserializationError');
      expect(error.message).toContain(`Cannot deserialize the ${part} of record orders-eu-3@42: ${detail}`);
      // Not toBeInstanceOf(Error): TextDecoder's TypeError comes from Node's realm, not Jest's sandbox.
      expect(error.cause).toHaveProperty('message', expect.any(String));
      expect({ part: error.part, topic: error.topic, partition: error.partition, offset: error.offset }).toEqual({
        part,
        topic: 'orders-eu',
        partition: 3,
        offset: 42,
      });
    });

    it('wraps what a function deserializer throws, as the cause', () => {
      // Prepare
      const thrown = new TypeError('no schema 7');
      const fn: Deserializer = () => {
        throw thrown;
      };

      // Act
      const error = deserializationError(() => deserialize(fn, Buffer.from('x'), record, part));

      // Assess
      expect(error.message).toBe(`Cannot deserialize the ${part} of record orders-eu-3@42: the ${part} deserializer threw: no schema 7`);
      expect(error.cause).toBe(thrown);
    });
  });

  it('wraps a thrown value that is not an Error', () => {
    // Prepare
    const fn: Deserializer = () => {
      throw 'bad bytes';
    };

    // Act
    const error = deserializationError(() => deserialize(fn, null, record, 'value'));

    // Assess
    expect(error.message).toContain('the value deserializer threw: bad bytes');
    expect(error.cause).toBe('bad bytes');
  });
});
