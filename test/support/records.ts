import type { AwsKafkaRecord, KafkaRecord } from '../../src/event';

/**
 * A decoded record for tests; `overrides` may set any field. `raw` is a minimal stand-in: use it only where
 * the code under test never reads the record as AWS sent it.
 */
export function kafkaRecord(overrides: Partial<KafkaRecord> = {}): KafkaRecord {
  return {
    topic: 'orders',
    partition: 0,
    offset: 0,
    timestamp: 1718000000000,
    timestampType: 'CREATE_TIME',
    key: Buffer.from('customer-1'),
    value: Buffer.from('{"id":1}'),
    headers: [],
    raw: { topic: 'orders', partition: 0, offset: 0 } as AwsKafkaRecord,
    ...overrides,
  };
}
