import type { KafkaRecord } from '../../../src/event';

/** A decoded record; `overrides` may set any field. `raw` is a matching record JSON object. */
export function kafkaRecord(overrides: Partial<KafkaRecord> = {}): KafkaRecord {
  const base = {
    topic: 'orders',
    partition: 3,
    offset: 42,
    timestamp: 1718000000000,
    timestampType: 'CREATE_TIME' as const,
    key: Buffer.from('customer-1'),
    value: Buffer.from('{"id":1}'),
    headers: [],
    ...overrides,
  };
  return {
    ...base,
    raw: overrides.raw ?? {
      topic: base.topic,
      partition: base.partition,
      offset: base.offset,
      timestamp: base.timestamp,
      timestampType: base.timestampType,
      key: base.key?.toString('base64') ?? null,
      value: base.value?.toString('base64') ?? null,
      headers: [],
    },
  };
}
