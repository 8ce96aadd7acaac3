import { z } from 'zod';
import { lanes, type LanesRecord } from '../../../src';

/** Compile-time checks (npm run typecheck): the handler's record is typed from the options. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
/** `seen` is the record checked, so it counts as used. */
const is = <T extends true>(seen: unknown): T => (seen === undefined ? true : true) as T;

process.env.KAFKA_LANES_GROUP ??= 'types-only';

describe('lanes(options, handler) types', () => {
  it('types record.value and record.key from the options', () => {
    lanes({ value: z.object({ id: z.number() }), key: z.string().min(1) }, async (record) => {
      is<Equal<typeof record.value, { id: number }>>(record);
      is<Equal<typeof record.key, string>>(record);
    });
    lanes({ value: { deserializer: 'string', schema: z.string().transform((s) => s.length) } }, async (record) => {
      is<Equal<typeof record.value, number>>(record);
      is<Equal<typeof record.key, string | null>>(record);
    });
    lanes({ value: 'raw', key: (bytes) => bytes?.length ?? 0 }, async (record) => {
      is<Equal<typeof record.value, Buffer | null>>(record);
      is<Equal<typeof record.key, number>>(record);
    });
    lanes({ concurrency: 4 }, async (record) => {
      is<Equal<typeof record.value, unknown>>(record);
    });
    // A handler that annotates its record keeps its own types, as before schemas.
    lanes({}, async (record: LanesRecord<{ total: number }>) => {
      is<Equal<typeof record.value, { total: number }>>(record);
    });
    expect(true).toBe(true);
  });
});
