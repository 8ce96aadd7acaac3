import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KafkaEventSource } from '../../../src/event';

/** Both event sources, for `describe.each`. */
export const SOURCES: ReadonlyArray<[KafkaEventSource]> = [['aws:kafka'], ['SelfManagedKafka']];

export const MSK_ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/test-cluster/11111111-2222-3333-4444-555555555555-1';

export const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** A record JSON object as AWS sends it; `overrides` may set any field, including to invalid values. */
export function awsRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    topic: 'orders',
    partition: 0,
    offset: 0,
    timestamp: 1718000000000,
    timestampType: 'CREATE_TIME',
    key: base64('customer-1'),
    value: base64('{"id":1}'),
    headers: [],
    ...overrides,
  };
}

/** A record JSON object with `field` left out. */
export function awsRecordWithout(field: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const record = awsRecord(overrides);
  delete record[field];
  return record;
}

/** An event JSON object as AWS sends it for `source` (MSK gets an ARN). */
export function awsEvent(
  source: KafkaEventSource,
  records: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    eventSource: source,
    ...(source === 'aws:kafka' ? { eventSourceArn: MSK_ARN } : {}),
    bootstrapServers: 'b-1.example:9092,b-2.example:9092',
    records,
    ...extra,
  };
}

/** Reads a fixture event as the Lambda runtime would hand it over: freshly parsed JSON. */
export function loadEventFixture(name: string): unknown {
  return JSON.parse(readFileSync(join(__dirname, '../../fixtures/events', name), 'utf8')) as unknown;
}
