import fc from 'fast-check';
import { decodeKafkaEvent, planOffsets, sameJson } from '../../../src/event';
import { awsEvent, awsRecord, base64 } from './factories';

function planOf(raws: unknown[]): ReturnType<typeof planOffsets> {
  const [batch] = decodeKafkaEvent(awsEvent('aws:kafka', { 'orders-0': raws })).partitions;
  return planOffsets(batch!.records, batch!.failures);
}

describe('planOffsets', () => {
  it('keeps one slot per offset, ascending, when offsets are distinct', () => {
    const plan = planOf([awsRecord({ offset: 2 }), awsRecord({ offset: 0 }), awsRecord({ offset: 1, timestamp: 'x' })]);
    expect(plan.slots.map((slot) => [slot.offset, slot.record ? 'record' : slot.failure ? 'failure' : 'conflict'])).toEqual([
      [0, 'record'], [1, 'failure'], [2, 'record'],
    ]);
    expect(plan.duplicates).toBe(0);
  });

  it('runs identical copies of a record once and counts the others as duplicates', () => {
    // Prepare: the same JSON, keys in another order
    const copy = { ...awsRecord({ offset: 5 }) };
    const reordered = Object.fromEntries(Object.entries(copy).reverse());

    // Act
    const plan = planOf([copy, reordered, awsRecord({ offset: 5 })]);

    // Assess
    expect(plan.slots).toHaveLength(1);
    expect(plan.slots[0]?.record?.offset).toBe(5);
    expect(plan.duplicates).toBe(2);
  });

  it('dead-letters every version of an offset delivered with differing contents, malformed ones included', () => {
    // Act
    const plan = planOf([
      awsRecord({ offset: 5, value: base64('a') }),
      awsRecord({ offset: 5, value: base64('b') }),
      awsRecord({ offset: 5, timestampType: 'NOPE' }),
      awsRecord({ offset: 5, value: base64('a') }),
      awsRecord({ offset: 6 }),
    ]);

    // Assess
    const [conflict, next] = plan.slots;
    expect(conflict?.conflict).toHaveLength(3);
    expect(conflict?.record).toBeUndefined();
    expect(next?.record?.offset).toBe(6);
    expect(plan.duplicates).toBe(1);
  });

  it('puts failures without a readable offset apart', () => {
    const plan = planOf([awsRecord({ offset: -1 }), awsRecord({ offset: 0 })]);
    expect(plan.unplaced).toHaveLength(1);
    expect(plan.slots).toHaveLength(1);
  });

  it('accounts for every delivered item exactly once', () => {
    const record = fc.record({
      offset: fc.oneof(fc.nat(4), fc.constant(-1)),
      value: fc.constantFrom(base64('a'), base64('b'), 'not base64'),
    });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 12 }), (shapes) => {
        const plan = planOf(shapes.map((shape) => awsRecord(shape)));
        const kept = plan.slots.reduce((sum, slot) => sum + (slot.conflict?.length ?? 1), 0);
        expect(kept + plan.unplaced.length + plan.duplicates).toBe(shapes.length);
        expect(new Set(plan.slots.map((slot) => slot.offset)).size).toBe(plan.slots.length);
      }),
      { numRuns: 500 },
    );
  });
});

describe('sameJson', () => {
  it('agrees with a comparison of canonical JSON for JSON values', () => {
    const canonical = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) => (
      v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 3 }), (a, b) => {
        expect(sameJson(a, b)).toBe(canonical(a) === canonical(b));
        expect(sameJson(a, JSON.parse(JSON.stringify(a)))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('compares values nested deeper than the call stack', () => {
    let a: unknown = 1;
    let b: unknown = 1;
    for (let i = 0; i < 50_000; i += 1) {
      a = [a];
      b = [b];
    }
    expect(sameJson(a, b)).toBe(true);
    expect(sameJson(a, [b])).toBe(false);
  });
});
