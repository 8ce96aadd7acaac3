import type { Logger } from '@aws-lambda-powertools/logger';
import type { PartitionRef } from '../ports/partition';
import { topicPartitionKey } from '../event';
import { METRIC, MetricUnit, type Telemetry } from '../telemetry';

/** What one invocation counts, each published as the metric of the same idea. */
export type CounterName =
  | 'recordsIn'
  | 'done'
  | 'duplicates'
  | 'parked'
  | 'retried'
  | 'deadLettered'
  | 'deferred'
  | 'refused'
  | 'refusedByBroker'
  | 'stale'
  | 'twins'
  | 'outputs'
  | 'keptForRecovery'
  | 'writtenBack'
  | 'waiting';

const COUNTER_METRIC: Record<CounterName, string> = {
  recordsIn: METRIC.recordsIn,
  done: METRIC.done,
  duplicates: METRIC.duplicates,
  parked: METRIC.parked,
  retried: METRIC.retried,
  deadLettered: METRIC.deadLettered,
  deferred: METRIC.deferred,
  refused: METRIC.refused,
  refusedByBroker: METRIC.refusedByBroker,
  stale: METRIC.stale,
  twins: METRIC.twins,
  outputs: METRIC.outputs,
  keptForRecovery: METRIC.keptForRecovery,
  writtenBack: METRIC.writtenBack,
  waiting: METRIC.waiting,
};

/** The counters every batch line has always carried; these others only when they happened. */
const OPTIONAL_COUNTERS: ReadonlySet<CounterName> = new Set(['refusedByBroker', 'stale', 'twins', 'keptForRecovery', 'writtenBack', 'waiting', 'outputs']);

/**
 * The figures of one invocation (counters, handler run times, where each partition stands), published once
 * at its end as metrics and one `batch processed` log line.
 */
export class RunReport {
  /** Handler run times in ms, summarised into the latency metric once per invocation. */
  readonly latencies: number[] = [];
  readonly #counters = new Map<CounterName, number>();
  readonly #frontiers: Array<{ key: string; frontier: number; highest: number }> = [];

  count(name: CounterName, by = 1): void {
    this.#counters.set(name, (this.#counters.get(name) ?? 0) + by);
  }

  /** Where a partition stands after its admission, for the frontier metrics. */
  window(ref: PartitionRef, window: { frontier: number; highest: number }): void {
    const key = topicPartitionKey(ref.topic, ref.partition);
    // Once per partition: a batch admitted in chunks reports where its last chunk left the partition.
    const known = this.#frontiers.find((f) => f.key === key);
    if (known === undefined) this.#frontiers.push({ key, frontier: window.frontier, highest: window.highest });
    else Object.assign(known, { frontier: window.frontier, highest: window.highest });
  }

  publish(telemetry: Telemetry, logger: Logger, durationMs: number, redelivered: number): void {
    const { metrics } = telemetry;
    const c: Record<string, number> = {};
    for (const name of Object.keys(COUNTER_METRIC) as CounterName[]) {
      const value = this.#counters.get(name) ?? 0;
      if (value > 0 || !OPTIONAL_COUNTERS.has(name)) {
        c[name] = value;
        metrics.addMetric(COUNTER_METRIC[name], MetricUnit.Count, value);
      }
    }
    c.notHandedOff = redelivered;
    metrics.addMetric(METRIC.notHandedOff, MetricUnit.Count, redelivered);
    metrics.addMetric(METRIC.batchDuration, MetricUnit.Milliseconds, durationMs);
    // EMF carries at most 100 values per metric and record: send evenly spaced quantiles of the run times,
    // so CloudWatch percentiles stay close without one metric write per record. 99, not 100: Powertools
    // flushes a metric on its 100th value, which would leave the publish below empty (and warning).
    for (const value of quantiles(this.latencies, 99)) metrics.addMetric(METRIC.handlerLatency, MetricUnit.Milliseconds, value);
    for (const f of this.#frontiers) {
      const single = metrics.singleMetric();
      single.addDimension('partition', f.key);
      single.addMetric(METRIC.frontier, MetricUnit.Count, f.frontier);
      single.addMetric(METRIC.highestSeen, MetricUnit.Count, f.highest);
    }
    metrics.publishStoredMetrics();
    logger.info('batch processed', { ...c, durationMs, partitions: this.#frontiers.length });
  }
}

/** At most `count` values, evenly spaced through the sorted values (all of them when there are fewer). */
export function quantiles(values: readonly number[], count: number): number[] {
  if (values.length <= count) return [...values];
  // A typed array sorts numerically in native code: no comparator called per comparison, no boxed numbers.
  const sorted = Float64Array.from(values).sort();
  return Array.from({ length: count }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (count - 1))]!);
}
