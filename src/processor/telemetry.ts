import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * Logs are structured JSON (Powertools Logger) and metrics are CloudWatch embedded metric format
 * (Powertools Metrics), the Lambda conventions. Names follow DESIGN.md section 9, in the words a user of
 * Parallel Consumer knows.
 */
export const METRIC = {
  recordsIn: 'RecordsIn',
  done: 'RecordsDone',
  duplicates: 'RecordsSkippedAsDuplicate',
  parked: 'RecordsParked',
  retried: 'RecordsRetried',
  deadLettered: 'RecordsDeadLettered',
  deferred: 'RecordsDeferred',
  refused: 'RecordsRefusedBackPressure',
  notHandedOff: 'RecordsNotHandedOff',
  /** Hand-off copies the broker refused for good (too large, invalid): dead-lettered without their value. */
  refusedByBroker: 'RecordsRefusedByBroker',
  /** Retry copies that were no longer their lane's head (duplicated, overtaken): dropped. */
  stale: 'RetryCopiesStale',
  /** Retry copies due later than the invocation could wait: written back to their tier unchanged. */
  writtenBack: 'RetryCopiesWrittenBack',
  /** Lane heads whose lease expired, their copy written again by the committer from Redis. */
  redriven: 'LaneHeadsRedriven',
  handlerLatency: 'HandlerLatency',
  batchDuration: 'BatchDuration',
  frontier: 'Frontier',
  highestSeen: 'HighestSeenOffset',
} as const;

export interface Telemetry {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export function createTelemetry(group: string): Telemetry {
  const logger = new Logger({ serviceName: 'kafka-lanes', persistentKeys: { group } });
  // Metrics' own warnings go through the structured logger, so they honour its level.
  const metrics = new Metrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes', defaultDimensions: { group }, logger });
  return { logger, metrics };
}

export { MetricUnit };
