import { Kafka, logLevel, type Admin } from 'kafkajs';
import { ensureTopics, parseTopicRequest, TOPICS_DEFAULTS, type EnsureTopicsOptions, type TopicAction } from '../admin/topics';
import { kafkaClientConfig, type KafkaConnectionDeps } from '../connections/kafka';
import { mskBootstrapBrokers, mskListener } from '../connections/msk';
import { deadlineSignal, untilAborted } from '../deadline';
import { ConfigError } from '../errors';
import { kafkaErrorOf, messageOf } from '../kafka-errors';
import { deadLetterTopic, resolveOptions, retryTopic } from '../options';
import type { KafkaOptions } from '../options/lanes-options';
import { responseBody, sendResponse, type CustomResourceEvent, type CustomResourceOutcome } from './custom-resource';
import { BROKERS_ATTRIBUTE } from './topics-resource';

/**
 * The custom resource that makes a group's topics part of its stack (`Custom::KafkaLanesTopics`, one per function
 * with a `kafkaLanes:` block). On `Create` and `Update` it runs what `kafka-lanes topics ensure` runs (`ensureTopics`:
 * the source topic when its partitions are declared, every retry tier, the dead-letter topic and the declared
 * outputs), and answers the brokers it used, for the functions' environment (`Fn::GetAtt ... BootstrapBrokers`). On
 * `Delete` it deletes nothing unless the block asked for it (`topics.deleteOnRemove`: the group's retry and
 * dead-letter topics, never the source or the outputs) and always answers SUCCESS: a stack is never stuck on it.
 */


/** The resource's properties as the plugin writes them (CloudFormation hands every scalar over as a string). */
export interface TopicsResourceProperties {
  readonly Group: string;
  readonly Tiers: readonly string[];
  readonly Source: string;
  readonly SourcePartitions?: string | number;
  readonly Outputs?: readonly string[];
  readonly RetryPartitions?: string | number;
  readonly RetentionMs?: string | number;
  readonly ReplicationFactor?: string | number;
  /** `true`: on `Delete`, delete the group's retry and dead-letter topics. */
  readonly DeleteOnRemove?: string | boolean;
}

/** The physical ID of a group's topics: the same for every answer while the group is the same. */
export const topicsPhysicalId = (group: string): string => `kafka-lanes-topics:${group}`;

function count(name: string, value: unknown): number | undefined {
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) throw new ConfigError(`Expected \`${name}\` to be a positive integer, got ${JSON.stringify(value)}`);
  return number;
}

function names(name: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw new ConfigError(`Expected \`${name}\` to be a list of names, got ${JSON.stringify(value)}`);
  return value as string[];
}

/**
 * What `ensureTopics` is asked, from the resource's properties. Pure.
 *
 * @throws ConfigError naming the property, what was expected and what was given.
 * @example
 * ensureRequest({ Group: 'orders-svc', Tiers: ['5s', '1m'], Source: 'orders', SourcePartitions: '6', Outputs: ['shipments'] });
 * // { group: 'orders-svc', topics: [{ topic: 'orders', partitions: 6 }], tiers: ['5s', '1m'], outputs: [{ topic: 'shipments' }] }
 */
export function ensureRequest(properties: Readonly<Record<string, unknown>>): EnsureTopicsOptions {
  const { Group: group, Source: source } = properties;
  if (typeof group !== 'string' || group === '') throw new ConfigError(`Expected \`Group\` to be the group's name, got ${JSON.stringify(group)}`);
  if (typeof source !== 'string' || source === '') throw new ConfigError(`Expected \`Source\` to be the source topic's name, got ${JSON.stringify(source)}`);
  const partitions = count('SourcePartitions', properties['SourcePartitions']);
  const retryPartitions = count('RetryPartitions', properties['RetryPartitions']);
  const retentionMs = count('RetentionMs', properties['RetentionMs']);
  const replicationFactor = count('ReplicationFactor', properties['ReplicationFactor']);
  return {
    group,
    topics: [partitions === undefined ? { topic: source } : { topic: source, partitions }],
    tiers: names('Tiers', properties['Tiers']),
    outputs: names('Outputs', properties['Outputs']).map((output) => parseTopicRequest(output, 'Outputs')),
    ...(retryPartitions === undefined ? {} : { retryPartitions }),
    ...(retentionMs === undefined ? {} : { retentionMs }),
    ...(replicationFactor === undefined ? {} : { replicationFactor }),
  };
}

const deleteOnRemove = (properties: Readonly<Record<string, unknown>>): boolean => String(properties['DeleteOnRemove'] ?? 'false') === 'true';

/**
 * A failure as a user reads it in the stack's events: each topic Kafka refused with Kafka's error name and message
 * (kafkajs gathers a CreateTopics refusal per topic), else Kafka's error, else the message.
 */
export function failureReason(error: unknown): string {
  const parts: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (depth > 4 || typeof value !== 'object' || value === null) return;
    const { errors, topic } = value as { errors?: unknown; topic?: unknown };
    if (Array.isArray(errors) && errors.length > 0) {
      errors.forEach((inner) => visit(inner, depth + 1));
      return;
    }
    const kafka = kafkaErrorOf(value);
    const text = `${kafka === undefined ? '' : `${kafka.type}: `}${messageOf(value)}`;
    parts.push(typeof topic === 'string' ? `topic \`${topic}\`: ${text}` : text);
  };
  visit(error, 0);
  return parts.length === 0 ? messageOf(error) : [...new Set(parts)].join('; ');
}

/** The brokers of the group's listener: given, or asked of MSK (`GetBootstrapBrokers`) once, here at deploy time. */
async function brokersOf(kafka: KafkaOptions, deps: KafkaConnectionDeps): Promise<string[]> {
  if (kafka.brokers.length > 0) return [...kafka.brokers];
  if (kafka.mskClusterArn !== undefined) return mskBootstrapBrokers(kafka.mskClusterArn, mskListener(kafka), deps.getBootstrapBrokers);
  throw new ConfigError('Expected KAFKA_LANES_BROKERS or KAFKA_LANES_MSK_CLUSTER_ARN in the environment of the topics function, got neither');
}

async function withAdmin<T>(kafka: Kafka, work: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin({ retry: { retries: 3 } });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

const describe = (action: TopicAction): string => (action.kind === 'ok' ? `checked ${action.topic}` : action.kind === 'create' ? `created ${action.topic}` : `grew ${action.topic}`);

/** A Lambda context's parts the handler reads. */
export interface TopicsContext {
  getRemainingTimeInMillis(): number;
  readonly logStreamName?: string;
}

/** Left to answer CloudFormation after the work: the work stops this long before the function's timeout. */
const ANSWER_MARGIN_MS = 10_000;

/**
 * Creates the handler of the topics resource: answers every request to its ResponseURL (see custom-resource.ts) and
 * returns the answer. The connection (brokers or the MSK cluster ARN, TLS, SASL) comes from the environment the
 * plugin sets, as for the group's other functions.
 *
 * @example
 * // what the plugin deploys as `<function>Topics`, the ServiceToken of `Custom::KafkaLanesTopics`:
 * export const handler = topicsResourceHandler();
 */
export function topicsResourceHandler(
  env: Readonly<Record<string, string | undefined>> = process.env,
  deps: KafkaConnectionDeps & { log?: (line: Record<string, unknown>) => void } = {},
): (event: CustomResourceEvent, context?: TopicsContext) => Promise<CustomResourceOutcome> {
  const log = deps.log ?? ((line) => console.log(JSON.stringify(line)));
  const connect = async (): Promise<{ kafka: Kafka; brokers: string[] }> => {
    const options = resolveOptions({}, env);
    const brokers = await brokersOf(options.kafka, deps);
    const config = await kafkaClientConfig({ ...options.kafka, brokers, mskClusterArn: undefined }, [], deps);
    return { kafka: new Kafka({ ...config, logLevel: logLevel.NOTHING, retry: { retries: 3 } }), brokers };
  };

  const work = async (event: CustomResourceEvent, budgetMs: number): Promise<CustomResourceOutcome> => {
    const properties = event.ResourceProperties;
    const group = typeof properties['Group'] === 'string' ? properties['Group'] : '';
    const physicalResourceId = event.PhysicalResourceId ?? topicsPhysicalId(group || event.LogicalResourceId);
    if (event.RequestType === 'Delete') {
      if (!deleteOnRemove(properties) || group === '') return { status: 'SUCCESS', physicalResourceId };
      const tiers = names('Tiers', properties['Tiers']);
      const owned = [...tiers.map((tier) => retryTopic(group, tier)), deadLetterTopic(group)];
      try {
        const { kafka } = await connect();
        const deleted = await withAdmin(kafka, async (admin) => {
          const listed = new Set(await admin.listTopics());
          const present = owned.filter((topic) => listed.has(topic));
          if (present.length > 0) await admin.deleteTopics({ topics: present, timeout: Math.min(30_000, budgetMs) });
          return present;
        });
        log({ level: 'INFO', message: 'topics deleted (topics.deleteOnRemove)', group, deleted });
      } catch (error) {
        // A stack being deleted (or rolled back) must not be stuck on topics it could not delete: say so and go on.
        log({ level: 'ERROR', message: 'topics not deleted', group, topics: owned, reason: failureReason(error) });
      }
      return { status: 'SUCCESS', physicalResourceId };
    }
    const request = ensureRequest(properties);
    const id = topicsPhysicalId(request.group);
    const { kafka, brokers } = await connect();
    if (event.RequestType === 'Update') {
      const dropped = names('Tiers', event.OldResourceProperties?.['Tiers']).filter((tier) => !(request.tiers ?? []).includes(tier));
      if (dropped.length > 0) await withAdmin(kafka, (admin) => refuseStrandedTiers(admin, request.group, dropped));
    }
    const result = await withAdmin(kafka, (admin) =>
      ensureTopics(admin, { ...request, readyTimeoutMs: Math.max(1_000, Math.min(TOPICS_DEFAULTS.readyTimeoutMs, budgetMs)) }),
    );
    log({ level: 'INFO', message: 'topics ensured', group: request.group, actions: result.actions.map(describe) });
    return { status: 'SUCCESS', physicalResourceId: id, data: { [BROKERS_ATTRIBUTE]: brokers.join(',') } };
  };

  return async (event, context) => {
    const budgetMs = Math.max(1_000, (context?.getRemainingTimeInMillis() ?? 300_000) - ANSWER_MARGIN_MS);
    const group = typeof event.ResourceProperties?.['Group'] === 'string' ? String(event.ResourceProperties['Group']) : '';
    const fallbackId = event.PhysicalResourceId ?? topicsPhysicalId(group || event.LogicalResourceId);
    let outcome: CustomResourceOutcome;
    try {
      outcome = await untilAborted(work(event, budgetMs), deadlineSignal(budgetMs), () => new Error(`not done within ${Math.round(budgetMs / 1000)} s (the function's timeout less the time to answer)`));
    } catch (error) {
      const where = context?.logStreamName === undefined ? '' : ` (log stream ${context.logStreamName})`;
      outcome = {
        status: 'FAILED',
        // A failed Update keeps the resource it had: the same physical ID.
        physicalResourceId: fallbackId,
        reason: `kafka-lanes could not ensure the topics of group \`${group}\`: ${failureReason(error)}${where}`,
      };
      log({ level: 'ERROR', message: 'topics not ensured', group, reason: outcome.reason });
    }
    await sendResponse(event.ResponseURL, responseBody(event, outcome));
    return outcome;
  };
}

/**
 * A retry tier dropped (or renamed: dropped and added) by an update loses its trigger: copies still waiting in its
 * topic would never run, and their lanes stay blocked. The update is refused while any is waiting, naming the tier,
 * the topic and the count; once the tier's trigger has read them all, the same update goes through. A check that
 * cannot be made (a refused group read, a broker error) fails the update with Kafka's answer, as any other.
 */
async function refuseStrandedTiers(admin: Admin, group: string, tiers: readonly string[]): Promise<void> {
  const waiting: string[] = [];
  for (const tier of tiers) {
    const topic = retryTopic(group, tier);
    if (!(await admin.listTopics()).includes(topic)) continue;
    const [ends, [committed]] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId: topic, topics: [topic] })]);
    const read = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    const count = ends.reduce((sum, p) => {
      const from = Math.max(read.get(p.partition) ?? -1, Number(p.low));
      return sum + Math.max(0, Number(p.high) - from);
    }, 0);
    if (count > 0) waiting.push(`retry tier \`${tier}\`: ${count} record(s) in \`${topic}\` its trigger (consumer group \`${topic}\`) has not read`);
  }
  if (waiting.length > 0) {
    throw new ConfigError(
      `retry tiers dropped or renamed while records wait in them, which would never run without their trigger: ${waiting.join('; ')}. ` +
        'Keep the tier until its trigger has read them (its lag is 0), then drop it',
    );
  }
}

// Built on the first request so that importing this module (tests, the plugin) reads no environment.
let deployed: ReturnType<typeof topicsResourceHandler> | undefined;

/** The Lambda handler the plugin deploys as the topics resource's ServiceToken. */
export const handler = async (event: CustomResourceEvent, context?: TopicsContext): Promise<CustomResourceOutcome> => {
  deployed ??= topicsResourceHandler();
  return deployed(event, context);
};
