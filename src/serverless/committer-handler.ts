import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { SecretDeps } from '../connections/secrets';
import type { CompletionStore } from '../completion/store';
import { eventSourcePositions, MemberlessOffsetCommitter, runCommitter, type CommitterResult } from '../committer';
import { kafkaClientConfig } from '../connections';
import { kafkaLogCreator } from '../connections/kafka-log';
import { resolveOptions } from '../options';
import { connectStore } from '../connections/redis';
import { importTelemetry } from '../telemetry';
import { HandOffWriter } from '../handoff';
import { deadLetterTopic, type LanesOptions } from '../options';
import { publishGroupFigures } from './group-metrics';

/** What one scheduled run returns: small enough to read in the Lambda console. */
export interface CommitterRunSummary {
  readonly groupId: string;
  readonly skipped?: 'lease-held';
  readonly moves: number;
  readonly stalled: ReadonlyArray<{ topic: string; partition: number; frontier: number | undefined }>;
  readonly trimmedBytes: number;
  /** Lane heads whose lease had expired and whose copy this run wrote again from Redis. */
  readonly redriven: number;
  /** Partitions whose Redis state was found lost (each logged as an error) and recovered from Kafka. */
  readonly recovered: number;
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
export function committerHandler(
  env: Readonly<Record<string, string | undefined>> = process.env,
  deps: SecretDeps = {},
): (() => Promise<CommitterRunSummary>) & { close(): Promise<void> } {
  const options = resolveOptions({}, env);
  // Loaded as the handler's telemetry is (`importTelemetry`): the plugin bundles the committer with the handlers,
  // and a `require` of Powertools here would put it into the chunks the handlers read at load.
  const telemetryLoad = importTelemetry(options.group);
  // Failing here would be unhandled until the first run awaits it.
  telemetryLoad.catch(() => undefined);
  let store: CompletionStore | undefined;
  // Made at the first run: a SASL secret is read then, once per cold start.
  let clients: Promise<CommitterClients> | undefined;
  const run = async (): Promise<CommitterRunSummary> => {
    const telemetry = await telemetryLoad;
    if (clients === undefined) {
      clients = committerClients(options, deps);
      clients.catch(() => (clients = undefined));
    }
    const { kafka, committer, sink, admin } = await clients;
    store ??= await connectStore(options, telemetry, deps);
    const result: CommitterResult = await runCommitter({
      store, group: options.group, committer, redrive: { store, options, sink, telemetry },
      eventSource: eventSourcePositions(admin, options.group),
      recovery: { parts: { store, kafka, options, sink }, telemetry },
    });
    const summary = summaryOf(result);
    if (result.skipped === undefined) await publishGroupFigures({ group: options.group, store, kafka, telemetry, partitions: result.partitions });
    if (summary.stalled.length > 0) telemetry.logger.warn('frontier stalled', { stalled: summary.stalled });
    telemetry.logger.info('committer run', { ...summary, stalled: summary.stalled.length });
    return summary;
  };
  /** Closes the connections (Lambda never needs it; tests do). */
  const close = async (): Promise<void> => {
    const made = await clients?.catch(() => undefined);
    const open = store;
    clients = undefined;
    store = undefined;
    await Promise.all([made?.sink.disconnect(), made?.closeAdmin(), open?.close()]);
  };
  return Object.assign(run, { close });
}

type CommitterClients = { kafka: Kafka; committer: MemberlessOffsetCommitter; sink: HandOffWriter; admin: () => Promise<Admin>; closeAdmin: () => Promise<void> };

/**
 * The committer's Kafka clients: brokers (or the MSK cluster ARN), TLS and SASL as for every client of the framework
 * (a scheduled event carries no bootstrap servers, so one of them must be configured).
 */
async function committerClients(options: LanesOptions, deps: SecretDeps): Promise<CommitterClients> {
  // A coordinator still loading or a leader moving is a retried warning, not an ERROR (as the handler's client).
  const kafka = new Kafka({ ...(await kafkaClientConfig(options.kafka, [], deps)), logLevel: logLevel.ERROR, logCreator: kafkaLogCreator });
  // Re-drive (docs/ARCHITECTURE.md, "The path of a retry copy"): a lane head whose retry function died while holding it gets its copy written
  // again from the payload kept in Redis, with the tiers and dead-letter policy the plugin put in the environment.
  // What the triggers committed in their own groups, read by an admin connected at its first use (kept warm).
  let admin: Promise<Admin> | undefined;
  const connectAdmin = (): Promise<Admin> => {
    if (admin === undefined) {
      const made = kafka.admin();
      admin = made.connect().then(() => made);
      admin.catch(() => (admin = undefined));
    }
    return admin;
  };
  return {
    kafka, admin: connectAdmin,
    closeAdmin: async () => {
      const connected = await admin?.catch(() => undefined);
      await connected?.disconnect();
    },
    committer: new MemberlessOffsetCommitter(kafka, options.group),
    sink: new HandOffWriter(kafka, { deadLetterTopic: deadLetterTopic(options.group) }),
  };
}

/** What a run did, as the handler returns and logs it. */
function summaryOf(result: CommitterResult): CommitterRunSummary {
  return {
    groupId: result.groupId,
    ...(result.skipped === undefined ? {} : { skipped: result.skipped }),
    moves: result.moves.length,
    stalled: result.partitions.filter((p) => p.stalled).map((p) => ({ topic: p.topic, partition: p.partition, frontier: p.frontier })),
    trimmedBytes: result.trimmedBytes,
    redriven: result.redriven?.length ?? 0,
    recovered: result.losses?.filter((loss) => loss.recovered !== undefined).length ?? 0,
  };
}

// Built lazily on the first invocation so that importing this module (tests, the plugin) reads no environment.
let scheduled: (() => Promise<CommitterRunSummary>) | undefined;

/** The Lambda handler the plugin deploys on a schedule. */
export const handler = async (): Promise<CommitterRunSummary> => {
  scheduled ??= committerHandler();
  return scheduled();
};
