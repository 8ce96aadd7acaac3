import fc from 'fast-check';
import { laneIdOf, laneIdOfKey, NULL_KEY_LANE, PARTITION_LANE } from '../../../src/lanes/lane-id';
import type { LanesOptions } from '../../../src/options';
import { kafkaRecord } from '../../support/records';

type LaneOptions = Pick<LanesOptions, 'ordering' | 'nullKey' | 'keyOf'>;

const keyMode = (overrides: Partial<LaneOptions> = {}): LaneOptions => ({ ordering: 'key', nullKey: 'independent', ...overrides });
const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
/** Bytes 0, 1, 2, ... (mod 256), `length` of them. */
const bytes = (length: number): Buffer => Buffer.from(Array.from({ length }, (_, i) => i % 256));

const MAX_LANE_ID = 128;
// A key of up to 96 bytes has a base64 of up to 128 characters: kept as is. Longer keys are hashed.
const LONGEST_UNHASHED_KEY = 96;

describe('laneIdOf', () => {
  describe.each(['independent', 'shared'] as const)("unordered, nullKey '%s'", (nullKey) => {
    it.each([
      ['a keyed record', Buffer.from('customer-1')],
      ['a record with a null key', null],
    ])('gives %s no lane (independent)', (_case, key) => {
      // Prepare
      const record = kafkaRecord({ key });

      // Act
      const lane = laneIdOf(record, { ordering: 'unordered', nullKey });

      // Assess
      expect(lane).toBeUndefined();
    });

    it('does not call keyOf', () => {
      // Prepare
      const keyOf = jest.fn(() => 'customer-1');

      // Act
      const lane = laneIdOf(kafkaRecord(), { ordering: 'unordered', nullKey, keyOf });

      // Assess
      expect(lane).toBeUndefined();
      expect(keyOf).not.toHaveBeenCalled();
    });
  });

  describe.each(['independent', 'shared'] as const)("partition, nullKey '%s'", (nullKey) => {
    it.each([
      ['a keyed record', Buffer.from('customer-1')],
      ['another key', Buffer.from('customer-2')],
      ['a record with a null key', null],
      ['a record with an empty key', Buffer.alloc(0)],
    ])('puts %s in the one partition lane', (_case, key) => {
      // Prepare
      const record = kafkaRecord({ key });

      // Act
      const lane = laneIdOf(record, { ordering: 'partition', nullKey });

      // Assess
      expect(lane).toBe(PARTITION_LANE);
    });

    it('does not call keyOf', () => {
      // Prepare
      const keyOf = jest.fn(() => null);

      // Act
      const lane = laneIdOf(kafkaRecord(), { ordering: 'partition', nullKey, keyOf });

      // Assess
      expect(lane).toBe(PARTITION_LANE);
      expect(keyOf).not.toHaveBeenCalled();
    });
  });

  describe('key', () => {
    it('is the base64 of the Kafka key (the doc example)', () => {
      // Prepare
      const record = kafkaRecord({ key: Buffer.from('customer-42') });

      // Act
      const lane = laneIdOf(record, keyMode());

      // Assess
      expect(lane).toBe('Y3VzdG9tZXItNDI=');
    });

    it('keeps every byte of a binary key', () => {
      // Prepare
      const record = kafkaRecord({ key: Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a]) });

      // Act
      const lane = laneIdOf(record, keyMode());

      // Assess
      expect(lane).toBe('AP/+gAo=');
      expect(Buffer.from(lane!, 'base64')).toEqual(Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a]));
    });

    it('gives records of one key one lane, and of different keys different lanes', () => {
      // Prepare
      const records = [
        kafkaRecord({ offset: 1, key: Buffer.from('customer-1') }),
        kafkaRecord({ offset: 2, key: Buffer.from('customer-2') }),
        kafkaRecord({ offset: 3, key: Buffer.from('customer-1') }),
      ];

      // Act
      const lanes = records.map((record) => laneIdOf(record, keyMode()));

      // Assess
      expect(lanes[0]).toBe(lanes[2]);
      expect(lanes[0]).not.toBe(lanes[1]);
    });

    it.each([
      ['independent', undefined],
      ['shared', NULL_KEY_LANE],
    ] as const)("gives a null key under nullKey '%s' the lane %p", (nullKey, expected) => {
      // Prepare
      const record = kafkaRecord({ key: null });

      // Act
      const lane = laneIdOf(record, keyMode({ nullKey }));

      // Assess
      expect(lane).toBe(expected);
    });

    it.each(['independent', 'shared'] as const)("treats an empty key as a key, not as null (nullKey '%s')", (nullKey) => {
      // Prepare
      const record = kafkaRecord({ key: Buffer.alloc(0) });

      // Act
      const lane = laneIdOf(record, keyMode({ nullKey }));

      // Assess
      expect(lane).toBeDefined();
      expect(lane).not.toBe(NULL_KEY_LANE);
      expect(lane).toBe('');
    });
  });

  describe('key with keyOf', () => {
    it.each([
      ['a string', 'customer-42', 'Y3VzdG9tZXItNDI='],
      ['a non-ASCII string, as UTF-8', 'Kühe 🐄', base64('Kühe 🐄')],
      ['a Buffer', Buffer.from('customer-42'), 'Y3VzdG9tZXItNDI='],
      ['a binary Buffer', Buffer.from([0xff, 0x00]), '/wA='],
    ])('uses %s it returns, not the Kafka key', (_case, derived, expected) => {
      // Prepare
      const record = kafkaRecord({ key: Buffer.from('kafka-key') });

      // Act
      const lane = laneIdOf(record, keyMode({ keyOf: () => derived }));

      // Assess
      expect(lane).toBe(expected);
    });

    it('gives a string and its UTF-8 bytes the same lane', () => {
      // Prepare
      const record = kafkaRecord();

      // Act
      const fromString = laneIdOf(record, keyMode({ keyOf: () => 'Ünïcødé-7' }));
      const fromBuffer = laneIdOf(record, keyMode({ keyOf: () => Buffer.from('Ünïcødé-7', 'utf8') }));
      const fromKafkaKey = laneIdOf(kafkaRecord({ key: Buffer.from('Ünïcødé-7', 'utf8') }), keyMode());

      // Assess
      expect(fromString).toBe(fromBuffer);
      expect(fromString).toBe(fromKafkaKey);
    });

    it('passes the record itself to keyOf', () => {
      // Prepare
      const record = kafkaRecord({ value: Buffer.from('{"customerId":"c-9"}') });
      const keyOf = jest.fn((r: typeof record) => (JSON.parse(r.value!.toString()) as { customerId: string }).customerId);

      // Act
      const lane = laneIdOf(record, keyMode({ keyOf }));

      // Assess
      expect(keyOf).toHaveBeenCalledTimes(1);
      expect(keyOf).toHaveBeenCalledWith(record);
      expect(lane).toBe(base64('c-9'));
    });

    describe.each([
      ['null', null],
      ['undefined', undefined],
    ] as const)('returning %s, on a record with a Kafka key', (_case, derived) => {
      it.each([
        ['independent', undefined],
        ['shared', NULL_KEY_LANE],
      ] as const)("follows nullKey '%s': %p", (nullKey, expected) => {
        // Prepare
        const record = kafkaRecord({ key: Buffer.from('kafka-key') });

        // Act
        const lane = laneIdOf(record, keyMode({ nullKey, keyOf: () => derived }));

        // Assess
        expect(lane).toBe(expected);
      });
    });

    it('lets what keyOf throws through (the processor dead-letters the record)', () => {
      // Prepare
      const thrown = new Error('no customerId');

      // Act
      const act = (): unknown => laneIdOf(kafkaRecord(), keyMode({ keyOf: () => { throw thrown; } }));

      // Assess
      expect(act).toThrow(thrown);
    });
  });

  describe('long keys', () => {
    it(`keeps a key of ${LONGEST_UNHASHED_KEY} bytes as its base64 of ${MAX_LANE_ID} characters`, () => {
      // Prepare
      const key = bytes(LONGEST_UNHASHED_KEY);

      // Act
      const lane = laneIdOf(kafkaRecord({ key }), keyMode());

      // Assess
      expect(lane).toBe(key.toString('base64'));
      expect(lane).toHaveLength(MAX_LANE_ID);
    });

    it.each([LONGEST_UNHASHED_KEY + 1, 200, 10_000, 1_000_000])('hashes a key of %p bytes into a short id', (length) => {
      // Prepare
      const key = bytes(length);

      // Act
      const lane = laneIdOf(kafkaRecord({ key }), keyMode())!;

      // Assess
      expect(lane.length).toBeLessThanOrEqual(MAX_LANE_ID);
      expect(lane).toMatch(/^#[A-Za-z0-9_-]+$/);
      expect(lane).not.toBe(NULL_KEY_LANE);
      expect(lane).not.toBe(PARTITION_LANE);
    });

    it('gives the same long key the same id, from a Buffer, a string or the Kafka key', () => {
      // Prepare
      const text = 'customer-'.repeat(50);

      // Act
      const fromKafkaKey = laneIdOf(kafkaRecord({ key: Buffer.from(text) }), keyMode());
      const again = laneIdOf(kafkaRecord({ offset: 99, key: Buffer.from(text) }), keyMode());
      const fromString = laneIdOf(kafkaRecord(), keyMode({ keyOf: () => text }));

      // Assess
      expect(again).toBe(fromKafkaKey);
      expect(fromString).toBe(fromKafkaKey);
    });

    it('gives long keys that differ only in their last byte different ids', () => {
      // Prepare
      const a = bytes(500);
      const b = Buffer.from(a);
      b[499] = a[499]! ^ 1;

      // Act
      const laneA = laneIdOf(kafkaRecord({ key: a }), keyMode());
      const laneB = laneIdOf(kafkaRecord({ key: b }), keyMode());

      // Assess
      expect(laneA).not.toBe(laneB);
    });

    it('gives a long key an id no short key can have', () => {
      // Prepare
      const long = laneIdOf(kafkaRecord({ key: bytes(LONGEST_UNHASHED_KEY + 1) }), keyMode())!;
      const short = laneIdOf(kafkaRecord({ key: bytes(LONGEST_UNHASHED_KEY) }), keyMode())!;

      // Assess: base64 has no '#'.
      expect(long.startsWith('#')).toBe(true);
      expect(short).not.toContain('#');
    });
  });

  describe('properties', () => {
    const keyBytes = fc.uint8Array({ maxLength: 300 }).map((array) => Buffer.from(array));

    it('any key gets a lane of at most 128 characters that is never the shared null-key or partition lane', () => {
      fc.assert(
        fc.property(keyBytes, fc.constantFrom('independent' as const, 'shared' as const), (key, nullKey) => {
          // Act
          const lane = laneIdOf(kafkaRecord({ key }), keyMode({ nullKey }));

          // Assess
          expect(lane).toBeDefined();
          expect(lane!.length).toBeLessThanOrEqual(MAX_LANE_ID);
          expect(lane).not.toBe(NULL_KEY_LANE);
          expect(lane).not.toBe(PARTITION_LANE);
        }),
        { numRuns: 500 },
      );
    });

    it('NULL_KEY_LANE is never the base64 of a key, nor found in one', () => {
      fc.assert(
        fc.property(keyBytes, (key) => {
          // Act
          const encoded = key.toString('base64');

          // Assess
          expect(encoded).not.toBe(NULL_KEY_LANE);
          expect(encoded).not.toContain(NULL_KEY_LANE);
        }),
        { numRuns: 1000 },
      );
    });

    it('distinct keys get distinct lanes, short or long', () => {
      fc.assert(
        fc.property(
          fc.uniqueArray(fc.uint8Array({ maxLength: 200 }), { minLength: 2, maxLength: 20, selector: (array) => Buffer.from(array).toString('hex') }),
          (keys) => {
            // Act
            const lanes = keys.map((key) => laneIdOf(kafkaRecord({ key: Buffer.from(key) }), keyMode()));

            // Assess
            expect(new Set(lanes).size).toBe(keys.length);
          },
        ),
        { numRuns: 300 },
      );
    });

    it('a key gets the same lane every time, whether it comes as bytes or as a string from keyOf', () => {
      fc.assert(
        fc.property(fc.string({ unit: 'binary', maxLength: 120 }), (text) => {
          // Prepare
          const record = kafkaRecord({ key: Buffer.from(text, 'utf8') });

          // Act
          const first = laneIdOf(record, keyMode());
          const second = laneIdOf(kafkaRecord({ key: Buffer.from(text, 'utf8') }), keyMode());
          const fromString = laneIdOf(kafkaRecord({ key: null }), keyMode({ keyOf: () => text }));

          // Assess
          expect(second).toBe(first);
          expect(fromString).toBe(first);
        }),
        { numRuns: 500 },
      );
    });
  });
});

describe('laneIdOfKey', () => {
  it('gives the lane laneIdOf gives, from the base64 of the key (null for a null key), in every mode', () => {
    fc.assert(
      fc.property(
        fc.option(fc.uint8Array({ maxLength: 200 }), { nil: null }),
        fc.constantFrom<LaneOptions['ordering']>('key', 'partition', 'unordered'),
        fc.constantFrom<LaneOptions['nullKey']>('independent', 'shared'),
        (key, ordering, nullKey) => {
          const record = kafkaRecord({ key: key === null ? null : Buffer.from(key) });
          const text = key === null ? null : Buffer.from(key).toString('base64');
          expect(laneIdOfKey(text, { ordering, nullKey })).toBe(laneIdOf(record, { ordering, nullKey }));
        },
      ),
    );
  });
});
