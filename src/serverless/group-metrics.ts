import type { Kafka } from 'kafkajs';
import { readGroupFigures } from '../admin/group-figures';
import type { CompletionStore } from '../completion/store';
import { METRIC, MetricUnit, type Telemetry } from '../telemetry';

/**
 * The committer's run publishes the figures the group's CloudWatch alarms watch (see `alarms.ts`): the oldest
 * blocked lane's age, blocked and held lanes, committed lag. Reading them must never fail the commit itself: a
 * failure is logged and the run goes on (the alarms treat a missing figure as missing data).
 */
export async function publishGroupFigures({
  group,
  store,
  kafka,
  telemetry,
  partitions,
}: {
  group: string;
  store: Pick<CompletionStore, 'groupState'>;
  kafka: Pick<Kafka, 'admin'>;
  telemetry: Telemetry;
  partitions: Parameters<typeof readGroupFigures>[0]['partitions'];
}): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const figures = await readGroupFigures({ group, store, admin, partitions });
    const { metrics } = telemetry;
    metrics.addMetric(METRIC.oldestBlockedLaneAge, MetricUnit.Milliseconds, figures.oldestBlockedLaneAgeMs);
    metrics.addMetric(METRIC.blockedLanes, MetricUnit.Count, figures.blockedLanes);
    metrics.addMetric(METRIC.heldLanes, MetricUnit.Count, figures.heldLanes);
    metrics.addMetric(METRIC.committedLag, MetricUnit.Count, figures.committedLag);
    metrics.publishStoredMetrics();
  } catch (error) {
    telemetry.logger.warn('group figures not published', { error: error instanceof Error ? error.message : String(error) });
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
