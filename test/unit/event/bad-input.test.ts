import fc from 'fast-check';
import { decodeKafkaEvent, encodeBase64, EventDecodeError, planOffsets } from '../../../src/event';
import { mutatedEvent } from '../../fuzz/bad-input-property';
import { awsEvent, awsRecord } from './factories';

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

describe('decodeKafkaEvent on hostile records', () => {
  it.each([
    ['key', { key: nested(20_000) }],
    ['value', { value: nested(20_000) }],
    ['headers[0]["h"][1]', { headers: [{ h: [1, nested(20_000)] }] }],
    ['offset', { offset: nested(20_000) }],
  ])('turns a record with 20,000 levels of nesting in %s into a failure naming it', (field, overrides) => {
    // Prepare
    const event = awsEvent('SelfManagedKafka', { 'orders-0': [awsRecord({ offset: 1 }), awsRecord(overrides)] });

    // Act
    const [batch] = decodeKafkaEvent(event).partitions;

    // Assess
    expect(batch?.records).toHaveLength(1);
    expect(batch?.failures).toHaveLength(1);
    expect(batch?.failures[0]?.field).toBe(field);
    expect(batch?.failures[0]?.message.length).toBeLessThan(400);
  });

  it('keeps a valid record with a deep extra field as it came', () => {
    const extra = nested(20_000);
    const [batch] = decodeKafkaEvent(awsEvent('aws:kafka', { 'orders-0': [awsRecord({ extra })] })).partitions;
    expect(batch?.records[0]?.raw).toHaveProperty('extra', extra);
  });

  it('decodes a 3.4 MB value (4.5 MB of base64) in an event near the 6 MB payload limit', () => {
    // Prepare
    const big = Buffer.alloc(3_400_000, 7);
    const second = Buffer.alloc(1_000_000, 9);
    const event = awsEvent('aws:kafka', { 'orders-0': [awsRecord({ value: encodeBase64(big) }), awsRecord({ offset: 1, value: encodeBase64(second) })] });
    expect(JSON.stringify(event).length).toBeGreaterThan(5_800_000);

    // Act
    const [batch] = decodeKafkaEvent(JSON.parse(JSON.stringify(event))).partitions;

    // Assess
    expect(batch?.failures).toEqual([]);
    expect(batch?.records[0]?.value?.equals(big)).toBe(true);
    expect(batch?.records[1]?.value?.equals(second)).toBe(true);
  });

  it('reports a record whose reading throws anything unforeseen as a failure, not a thrown batch', () => {
    // Prepare: a getter on `topic` that throws stands for a bug of ours meeting odd input
    const raw = awsRecord();
    Object.defineProperty(raw, 'topic', { enumerable: true, get: () => { throw new RangeError('unforeseen'); } });

    // Act
    const [batch] = decodeKafkaEvent(awsEvent('aws:kafka', { 'orders-0': [raw] })).partitions;

    // Assess
    expect(batch?.failures[0]?.field).toBe('record');
    expect(batch?.failures[0]?.reason).toContain('RangeError: unforeseen');
  });
});

describe('decodeKafkaEvent on mutated fixture events (property)', () => {
  it('returns or throws EventDecodeError, accounts for every record, and leaves Object.prototype alone', () => {
    const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).join(',');
    fc.assert(
      fc.property(mutatedEvent({ maxLargeValue: 0 }), (build) => {
        // Prepare
        const event = build('orders') as { records?: unknown };

        // Act
        let decoded;
        try {
          decoded = decodeKafkaEvent(event);
        } catch (error) {
          expect(error).toBeInstanceOf(EventDecodeError);
          return;
        }

        // Assess: every element of every `records` list is a record, a failure, or an identical copy
        const lists = Object.values(event.records as Record<string, unknown[]>);
        let accounted = 0;
        for (const batch of decoded.partitions) {
          const plan = planOffsets(batch.records, batch.failures);
          accounted += plan.slots.reduce((sum, slot) => sum + (slot.conflict?.length ?? 1), 0) + plan.unplaced.length + plan.duplicates;
        }
        expect(accounted).toBe(lists.reduce((sum, list) => sum + list.length, 0));
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    expect(Object.getOwnPropertyNames(Object.prototype).join(',')).toBe(prototypeBefore);
  });
});
