import type { AwsKafkaRecord, KafkaRecord } from '../../../src/event';
import type { Task } from '../../../src/processor/scheduler';

/**
 * A decoded record; `overrides` may set any field. `raw` is a minimal stand-in: lane ids and failure decisions
 * never read it.
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

/** A scheduler task; `id` names it in assertions (`orders-0@3`). */
export interface TestTask extends Task {
  readonly id: string;
}

/** A task of lane `lane` (`undefined`: independent) at `offset` of `partitionKey`. */
export function task(partitionKey: string, offset: number, lane?: string): TestTask {
  return { partitionKey, lane, offset, id: `${partitionKey}@${offset}` };
}

/** The tasks of one partition at offsets 0, 1, 2, ...: `lanes[i]` is the lane of offset i. */
export function partitionTasks(partitionKey: string, lanes: readonly (string | undefined)[]): TestTask[] {
  return lanes.map((lane, offset) => task(partitionKey, offset, lane));
}
