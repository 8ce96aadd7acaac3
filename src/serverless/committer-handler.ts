import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { CompletionStore } from '../completion/store';
import { runCommitter, type CommitterResult } from '../committer';
import { ConfigError } from '../errors';
import { ENV } from '../options/constants';
import { resolveOptions } from '../options/schema';
import { connectRedis } from '../processor/lanes';
import { createTelemetry } from '../processor/telemetry';

/** What one scheduled run returns: small enough to read in the Lambda console. */
export interface CommitterRunSummary {
  readonly groupId: string;
  readonly skipped?: 'lease-held';
  readonly moves: number;
  readonly stalled: ReadonlyArray<{ topic: string; partition: number; frontier: number | undefined }>;
  readonly trimmedBytes: number;
}

/**
 * Creates the scheduled committer's Lambda handler: each run commits every tracked partition's frontier to
 * the completion group `<group>.lanes` (`runCommitter`, the admin way) and logs stalls. The group, Redis and
 * the brokers come from the environment the serverless plugin sets; they are read and validated once.
 *
 * @example
 * // what the plugin deploys, scheduled `rate(1 minute)`:
 * export const handler = committerHandler();
 */
export function committerHandler(env: Readonly<Record<string, string | undefined>> = process.env): () => Promise<CommitterRunSummary> {
  const options = resolveOptions({}, env);
  if (options.kafka.brokers.length === 0) {
    throw new ConfigError(`Invalid committer configuration: expected \`${ENV.brokers}\` (comma-separated \`host:port\`), got none`);
  }
  const telemetry = createTelemetry(options.group);
  let store: CompletionStore | undefined;
  const kafka = new Kafka({
    clientId: `${options.kafka.clientId}-committer`,
    brokers: [...options.kafka.brokers],
    ssl: options.kafka.ssl,
    ...(options.kafka.sasl === undefined ? {} : { sasl: { ...options.kafka.sasl } as SASLOptions }),
    logLevel: logLevel.ERROR,
  });
  return async () => {
    store ??= new CompletionStore(connectRedis(options, telemetry));
    const result: CommitterResult = await runCommitter({ store, kafka, group: options.group });
    const summary: CommitterRunSummary = {
      groupId: result.groupId,
      ...(result.skipped === undefined ? {} : { skipped: result.skipped }),
      moves: result.moves.length,
      stalled: result.partitions.filter((p) => p.stalled).map((p) => ({ topic: p.topic, partition: p.partition, frontier: p.frontier })),
      trimmedBytes: result.trimmedBytes,
    };
    if (summary.stalled.length > 0) telemetry.logger.warn('frontier stalled', { stalled: summary.stalled });
    telemetry.logger.info('committer run', { ...summary, stalled: summary.stalled.length });
    return summary;
  };
}

// Built lazily on the first invocation so that importing this module (tests, the plugin) reads no environment.
let scheduled: (() => Promise<CommitterRunSummary>) | undefined;

/** The Lambda handler the plugin deploys on a schedule. */
export const handler = async (): Promise<CommitterRunSummary> => {
  scheduled ??= committerHandler();
  return scheduled();
};
