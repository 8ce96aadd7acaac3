import { Kafka, logLevel } from 'kafkajs';
import { CompletionStore } from '../completion/store';
import { MemberlessOffsetCommitter, runCommitter, type CommitterResult } from '../committer';
import { kafkaConnectionConfig } from '../connections';
import { resolveOptions } from '../options';
import { connectRedis } from '../connections/redis';
import { importTelemetry } from '../engine/telemetry';
import { HandOffWriter } from '../handoff';
import { deadLetterTopic } from '../options';

/** What one scheduled run returns: small enough to read in the Lambda console. */
export interface CommitterRunSummary {
  readonly groupId: string;
  readonly skipped?: 'lease-held';
  readonly moves: number;
  readonly stalled: ReadonlyArray<{ topic: string; partition: number; frontier: number | undefined }>;
  readonly trimmedBytes: number;
  /** Lane heads whose lease had expired and whose copy this run wrote again from Redis. */
  readonly redriven: number;
}

/**
 * Creates the scheduled committer's Lambda handler: each run commits every tracked partition's frontier to
 * the completion group `<group>.lanes` (`runCommitter` with a member-less commit) and logs stalls. The group, Redis and
 * the brokers (or the MSK cluster ARN) come from the environment the serverless plugin sets; they are read and
 * validated once.
 *
 * @example
 * // what the plugin deploys, scheduled `rate(1 minute)`:
 * export const handler = committerHandler();
 */
export function committerHandler(env: Readonly<Record<string, string | undefined>> = process.env): () => Promise<CommitterRunSummary> {
  const options = resolveOptions({}, env);
  // Loaded as the handler's telemetry is (`importTelemetry`): the plugin bundles the committer with the handlers,
  // and a `require` of Powertools here would put it into the chunks the handlers read at load.
  const telemetryLoad = importTelemetry(options.group);
  // Failing here would be unhandled until the first run awaits it.
  telemetryLoad.catch(() => undefined);
  let store: CompletionStore | undefined;
  // Brokers (or the MSK cluster ARN), TLS and SASL as for every client of the framework; a scheduled event
  // carries no bootstrap servers, so one of them must be configured.
  const kafka = new Kafka({ ...kafkaConnectionConfig(options.kafka), logLevel: logLevel.ERROR });
  const committer = new MemberlessOffsetCommitter(kafka, options.group);
  // Re-drive (DESIGN.md section 4): a lane head whose retry function died while holding it gets its copy written
  // again from the payload kept in Redis, with the tiers and dead-letter policy the plugin put in the environment.
  const sink = new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(options.group) });
  return async () => {
    const telemetry = await telemetryLoad;
    store ??= new CompletionStore(await connectRedis(options, telemetry));
    const result: CommitterResult = await runCommitter({
      store, group: options.group, committer, redrive: { store, options, sink, telemetry },
    });
    const summary: CommitterRunSummary = {
      groupId: result.groupId,
      ...(result.skipped === undefined ? {} : { skipped: result.skipped }),
      moves: result.moves.length,
      stalled: result.partitions.filter((p) => p.stalled).map((p) => ({ topic: p.topic, partition: p.partition, frontier: p.frontier })),
      trimmedBytes: result.trimmedBytes,
      redriven: result.redriven?.length ?? 0,
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
