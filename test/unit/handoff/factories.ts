import type { KafkaHeader, KafkaRecord } from '../../../src/event';
import { kafkaRecord as baseRecord } from '../../support/records';
import type { HandOffItem } from '../../../src/handoff';

export const header = (name: string, value: string | Buffer): KafkaHeader => ({
  name,
  value: typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
});

/** A decoded record at `orders-3@41`; `raw` is a stand-in, the hand-off never reads it. */
export function kafkaRecord(overrides: Partial<KafkaRecord> = {}): KafkaRecord {
  return baseRecord({ partition: 3, offset: 41, ...overrides });
}

/** A retry item for `record` (default: a fresh record), first failure at 1718000001000, due 5 s later. */
export function retryItem(overrides: Partial<HandOffItem> = {}): HandOffItem {
  const record = overrides.record ?? kafkaRecord();
  return {
    record,
    origin: { topic: record.topic, partition: record.partition, offset: record.offset },
    kind: 'retry',
    topic: 'grp.retry.5s',
    attempt: 2,
    dueAtMs: 1718000006000,
    firstFailureAtMs: 1718000001000,
    error: { name: 'TypeError', message: 'boom' },
    ...overrides,
  };
}
