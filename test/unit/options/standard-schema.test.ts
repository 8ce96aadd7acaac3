import type { StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import {
  DeserializationError,
  isStandardSchema,
  readRecordParts,
  resolveOptions,
  SchemaValidationError,
  validatePart,
} from '../../../src/options';
import { decideFailure } from '../../../src/lanes/outcome';
import { kafkaRecord } from '../../support/records';

/** A hand-made Standard Schema, as a library other than zod would give (async when asked). */
function schemaOf<T>(check: (value: unknown) => StandardSchemaV1.Result<T>, { async = false, vendor = 'hand' } = {}): StandardSchemaV1<unknown, T> {
  return {
    '~standard': {
      version: 1,
      vendor,
      validate: (value) => (async ? Promise.resolve().then(() => check(value)) : check(value)),
    },
  };
}

const positive = (value: unknown): StandardSchemaV1.Result<number> => (
  typeof value === 'number' && value > 0 ? { value } : { issues: [{ message: 'must be a positive number', path: [{ key: 'amount' }] }] });

const record = kafkaRecord({ topic: 'orders', partition: 2, offset: 7, value: Buffer.from('{"id":"x","lines":[{"qty":-1}]}') });
const order = z.object({ id: z.number(), lines: z.array(z.object({ qty: z.number().positive() })) });

describe('Standard Schema options', () => {
  it('takes a schema alone, reading a value as JSON and a key as a string', () => {
    const options = resolveOptions({ group: 'g', value: order, key: z.string() }, {});
    expect(options.value).toBe('json');
    expect(options.valueSchema).toBe(order);
    expect(options.key).toBe('string');
    expect(options.keySchema).toBeDefined();
  });

  it('takes { deserializer, schema }, and a schema that is a function (as arktype makes them)', () => {
    const callable = Object.assign(() => 'not a deserializer', schemaOf(positive));
    const options = resolveOptions({ group: 'g', value: { deserializer: 'string', schema: z.string() }, key: callable }, {});
    expect(options.value).toBe('string');
    expect(options.keySchema).toBe(callable);
    expect(options.key).toBe('string');
    expect(isStandardSchema(callable)).toBe(true);
  });

  it.each([
    [{ schema: 'x' }],
    [{ deserializer: 'avro', schema: z.string() }],
    [{ schema: z.string(), extra: 1 }],
    [{ '~standard': { version: 2, validate: () => ({ value: 1 }) } }],
  ])('refuses %p at start-up, saying what a value option may be', (value) => {
    expect(() => resolveOptions({ group: 'g', value } as never, {})).toThrow(/`value`: expected `json`, `string`, `raw`, a function .*Standard Schema/);
  });
});

describe('validatePart', () => {
  it('gives the schema output (transforms applied)', () => {
    expect(validatePart(z.string().transform((s) => s.length), 'abc', record, 'value')).toBe(3);
  });

  it('throws a SchemaValidationError naming the record, each issue path and message', () => {
    // Act
    const act = (): unknown => validatePart(order, { id: 'x', lines: [{ qty: -1 }] }, record, 'value');

    // Assess
    expect(act).toThrow(SchemaValidationError);
    expect(act).toThrow(/^Cannot deserialize the value of record orders-2@7: does not match its schema: value\.id: .*; value\.lines\[0\]\.qty: /);
  });

  it('cuts many and long issues short', () => {
    const many = z.object(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`field${i}`, z.string({ error: 'x'.repeat(1000) })])));
    let error: unknown;
    try {
      validatePart(many, {}, record, 'value');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SchemaValidationError);
    expect((error as SchemaValidationError).issues).toHaveLength(5);
    expect((error as Error).message).toContain('(and 25 more)');
    expect((error as Error).message.length).toBeLessThan(1_000);
  });

  it('supports schemas that validate asynchronously', async () => {
    await expect(validatePart(schemaOf(positive, { async: true }), 5, record, 'value')).resolves.toBe(5);
    await expect(validatePart(schemaOf(positive, { async: true }), -5, record, 'value')).rejects.toThrow(/value\.amount: must be a positive number/);
  });

  it('turns a schema that throws, or returns no result, into a DeserializationError', async () => {
    const throwing = schemaOf(() => {
      throw new Error('schema bug');
    });
    expect(() => validatePart(throwing, 1, record, 'key')).toThrow(/the key schema threw: schema bug/);
    const rejecting: StandardSchemaV1 = { '~standard': { version: 1, vendor: 'x', validate: () => Promise.reject(new Error('remote down')) } };
    await expect(validatePart(rejecting, 1, record, 'key')).rejects.toThrow(DeserializationError);
    const empty = { '~standard': { version: 1, vendor: 'x', validate: () => null } } as unknown as StandardSchemaV1;
    expect(() => validatePart(empty, 1, record, 'key')).toThrow(/instead of a result/);
  });
});

describe('readRecordParts', () => {
  it('is synchronous without an asynchronous schema', () => {
    const options = resolveOptions({ group: 'g', value: z.object({ id: z.number() }) }, {});
    const parts = readRecordParts(options, kafkaRecord({ value: Buffer.from('{"id":1}') }));
    expect(parts).toEqual({ key: 'customer-1', value: { id: 1 } });
  });

  it('awaits an asynchronous schema, and leaves no rejection unhandled when the other part fails', async () => {
    const options = resolveOptions({ group: 'g', key: schemaOf(() => ({ issues: [{ message: 'bad key' }] }), { async: true }), value: 'json' }, {});
    await expect(readRecordParts(options, kafkaRecord({ value: Buffer.from('{"id":1}') }))).rejects.toThrow(/key: bad key/);
    // The value is not JSON: thrown at once, while the key's validation is still pending (and rejects).
    expect(() => readRecordParts(options, kafkaRecord({ value: Buffer.from('{') }))).toThrow(/not JSON/);
    await new Promise((resolve) => setImmediate(resolve));
  });
});

describe('decideFailure', () => {
  it('dead-letters a schema mismatch with its own reason', () => {
    expect(decideFailure(new SchemaValidationError('value', record, [{ message: 'no' }]), 1, 5)).toEqual({ action: 'dead-letter', reason: 'schema-validation' });
    expect(decideFailure(new DeserializationError('value', record, 'not JSON'), 1, 5)).toEqual({ action: 'dead-letter', reason: 'deserialization' });
  });
});
