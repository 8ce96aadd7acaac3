import type * as PowertoolsLogger from '@aws-lambda-powertools/logger';
import type { Logger } from '@aws-lambda-powertools/logger';
import type * as PowertoolsMetrics from '@aws-lambda-powertools/metrics';
import type { Metrics, MetricUnit as PowertoolsMetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * Logs are structured JSON (Powertools Logger) and metrics are CloudWatch embedded metric format
 * (Powertools Metrics), the Lambda conventions. Names follow docs/ARCHITECTURE.md, "Operating it", in the words a user of
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
  /** Retry copies of a head another copy of it was running (written twice after a crash): back to their tier until that run ends. */
  twins: 'RetryCopiesTwin',
  outputs: 'OutputsSent',
  /** Retry copies due later than the invocation could wait: written back to their tier unchanged. */
  writtenBack: 'RetryCopiesWrittenBack',
  /** Retry copies not due yet in a round of a durable execution: left waiting, suspended, for a later round. */
  waiting: 'RetryCopiesWaiting',
  /** Lane heads whose lease expired, their copy written again by the committer from Redis. */
  redriven: 'LaneHeadsRedriven',
  /** Partitions whose Redis state a committer run found lost (docs/durability.md). */
  stateLost: 'RedisStateLost',
  /** Partitions recovered from Kafka after a loss. */
  recovered: 'PartitionsRecovered',
  /** Retry copies whose lane entry was missing while their origin's state looked lost: kept, not dropped as stale. */
  keptForRecovery: 'RetryCopiesHeldForRecovery',
  handlerLatency: 'HandlerLatency',
  batchDuration: 'BatchDuration',
  frontier: 'Frontier',
  highestSeen: 'HighestSeenOffset',
  /** Published by the committer once a run, for the group's alarms: the age of the lane blocked the longest. */
  oldestBlockedLaneAge: 'OldestBlockedLaneAge',
  blockedLanes: 'BlockedLanes',
  heldLanes: 'HeldLanes',
  /** Source records not yet committed by `<group>.lanes` (end offset minus committed, summed). */
  committedLag: 'CommittedLag',
} as const;

export interface Telemetry {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

interface Powertools {
  readonly Logger: typeof PowertoolsLogger.Logger;
  readonly Metrics: typeof PowertoolsMetrics.Metrics;
}

/**
 * The `service` of the logs, `ctx.logger`'s included: the user's service as Powertools names it
 * (`POWERTOOLS_SERVICE_NAME`, the variable every Powertools utility reads), else `kafka-lanes`. The metrics keep
 * `kafka-lanes`: the plugin's alarms and dashboard select them by that dimension.
 *
 * @example
 * logServiceName({ POWERTOOLS_SERVICE_NAME: 'shop' }); // 'shop'
 */
export function logServiceName(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const named = env['POWERTOOLS_SERVICE_NAME']?.trim();
  return named === undefined || named === '' ? 'kafka-lanes' : named;
}

function telemetryOf({ Logger, Metrics }: Powertools, group: string): Telemetry {
  const logger = new Logger({ serviceName: logServiceName(), persistentKeys: { group } });
  // Metrics' own warnings go through the structured logger, so they honour its level.
  const metrics = new Metrics({ namespace: 'KafkaLanes', serviceName: 'kafka-lanes', defaultDimensions: { group }, logger });
  return { logger, metrics };
}

/**
 * The logger and the metrics of a function, Powertools loaded at the first call: the handler's path, which makes
 * them at the first invocation. `import()`s, so a cold start neither reads nor evaluates Powertools and the
 * Node.js built-ins it imports (a chunk of its own in an ESM bundle with splitting, a wrapped module evaluated on
 * the first call in a CommonJS bundle). Keep `createTelemetry` off the handler's path: its `require` would put
 * Powertools back into the handler's chunk.
 *
 * @example
 * const telemetry = await importTelemetry('orders');
 */
export async function importTelemetry(group: string): Promise<Telemetry> {
  const [{ Logger }, { Metrics }] = await Promise.all([import('@aws-lambda-powertools/logger'), import('@aws-lambda-powertools/metrics')]);
  return telemetryOf({ Logger, Metrics }, group);
}

/**
 * The logger and the metrics of a function, synchronously (the committer, tests, benchmarks); Powertools is
 * required at the first call, not when this module loads.
 *
 * @example
 * const telemetry = createTelemetry('orders');
 * telemetry.metrics.addMetric(METRIC.done, MetricUnit.Count, 1);
 */
export function createTelemetry(group: string): Telemetry {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Logger } = require('@aws-lambda-powertools/logger') as typeof PowertoolsLogger;
  const { Metrics } = require('@aws-lambda-powertools/metrics') as typeof PowertoolsMetrics;
  /* eslint-enable @typescript-eslint/no-require-imports */
  return telemetryOf({ Logger, Metrics }, group);
}

/**
 * Powertools' `MetricUnit`, defined here so that naming a unit does not load Powertools at cold start; the
 * `satisfies` keeps it equal to Powertools' own.
 */
export const MetricUnit = {
  Seconds: 'Seconds',
  Microseconds: 'Microseconds',
  Milliseconds: 'Milliseconds',
  Bytes: 'Bytes',
  Kilobytes: 'Kilobytes',
  Megabytes: 'Megabytes',
  Gigabytes: 'Gigabytes',
  Terabytes: 'Terabytes',
  Bits: 'Bits',
  Kilobits: 'Kilobits',
  Megabits: 'Megabits',
  Gigabits: 'Gigabits',
  Terabits: 'Terabits',
  Percent: 'Percent',
  Count: 'Count',
  BytesPerSecond: 'Bytes/Second',
  KilobytesPerSecond: 'Kilobytes/Second',
  MegabytesPerSecond: 'Megabytes/Second',
  GigabytesPerSecond: 'Gigabytes/Second',
  TerabytesPerSecond: 'Terabytes/Second',
  BitsPerSecond: 'Bits/Second',
  KilobitsPerSecond: 'Kilobits/Second',
  MegabitsPerSecond: 'Megabits/Second',
  GigabitsPerSecond: 'Gigabits/Second',
  TerabitsPerSecond: 'Terabits/Second',
  CountPerSecond: 'Count/Second',
  NoUnit: 'None',
} as const satisfies typeof PowertoolsMetricUnit;
