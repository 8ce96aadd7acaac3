import { Kafka, logLevel, type Admin } from 'kafkajs';
import { ensureTopics, parseTopicRequest, TOPICS_DEFAULTS, type EnsureTopicsOptions, type TopicAction } from '../admin/topics';
import { kafkaClientConfig, type KafkaConnectionDeps } from '../connections/kafka';
import { deadlineSignal, untilAborted } from '../deadline';
import { ConfigError } from '../errors';
import { messageOf } from '../describe';
import { kafkaErrorOf } from '../kafka-errors';
import { deadLetterTopic, resolveOptions, retryTopic } from '../options';
import { deleteOnRemove } from './topics-resource';

/**
 * The worker of a group's topics resource (`Custom::KafkaLanesTopics`, one per function with a `kafkaLanes:` block),
 * in the group's VPC. The provider (topics-provider.ts) answers CloudFormation; this runs the Kafka part: on `Create`
 * and `Update` what `kafka-lanes topics ensure` runs (`ensureTopics`: the source topic when its partitions are
 * declared, every retry tier, the dead-letter topic and the declared outputs); on `Delete`, only when the block asked
 * for it (`topics.deleteOnRemove`), the group's retry and dead-letter topics, never the source or the outputs.
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
  /** The MSK cluster whose topics these are (its brokers asked of MSK by the provider); or `Brokers`. */
  readonly Cluster?: string;
  /** The cluster's listener the group's clients use (`iam`, `scram`, `tls`, `plaintext`), with `Cluster`. */
  readonly Listener?: string;
  /** The brokers, comma-separated, when they are configured rather than asked of MSK. */
  readonly Brokers?: string;
}


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

/**
 * What the topics provider (topics-provider.ts, outside the VPC) asks the worker: the CloudFormation request's type
 * and properties, and the brokers it took from the resource's properties or from MSK.
 */
export interface TopicsWorkRequest {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResourceProperties: Readonly<Record<string, unknown>>;
  readonly OldResourceProperties?: Readonly<Record<string, unknown>>;
  readonly brokers: readonly string[];
  /**
   * The stack is rolling back (the provider asked CloudFormation): a tier the rollback drops is dropped even while
   * copies wait in it (they are logged), since refusing would leave the stack in UPDATE_ROLLBACK_FAILED.
   */
  readonly rollback?: boolean;
  /** Milliseconds the provider waits for the answer. */
  readonly budgetMs: number;
}

/** The worker's answer; a failure is an answer too, with Kafka's reason, never a thrown error. */
export type TopicsWorkResult =
  | { readonly status: 'SUCCESS'; readonly actions: readonly string[] }
  | { readonly status: 'FAILED'; readonly reason: string };

/** A Lambda context's parts the worker reads. */
export interface TopicsContext {
  getRemainingTimeInMillis(): number;
  readonly logStreamName?: string;
}

/** Left to the provider after the work: the work stops this long before the budget it was given. */
const ANSWER_MARGIN_MS = 5_000;

/**
 * Creates the topics worker: the function in the group's VPC that talks to Kafka for the topics resource. The
 * provider (outside the VPC) answers CloudFormation and invokes this one synchronously with the brokers; the worker
 * never answers CloudFormation itself, so it needs no route to S3 and no MSK API endpoint. Auth (TLS, SASL) comes from
 * the environment the plugin sets, as for the group's other functions; the brokers from the request.
 *
 * @example
 * // what the plugin deploys as `<function>TopicsVpc`, invoked by `<function>Topics`:
 * export const handler = topicsWorkerHandler();
 */
export function topicsWorkerHandler(
  env: Readonly<Record<string, string | undefined>> = process.env,
  deps: KafkaConnectionDeps & { log?: (line: Record<string, unknown>) => void } = {},
): (request: TopicsWorkRequest, context?: TopicsContext) => Promise<TopicsWorkResult> {
  const log = deps.log ?? ((line) => console.log(JSON.stringify(line)));
  const connect = async (brokers: readonly string[]): Promise<Kafka> => {
    if (brokers.length === 0) throw new ConfigError('Expected the brokers of the cluster in the request of the topics provider, got none');
    const options = resolveOptions({}, env);
    const config = await kafkaClientConfig({ ...options.kafka, brokers: [...brokers], mskClusterArn: undefined }, [], deps);
    return new Kafka({ ...config, logLevel: logLevel.NOTHING, retry: { retries: 3 } });
  };

  const work = async (request: TopicsWorkRequest, budgetMs: number): Promise<TopicsWorkResult> => {
    const properties = request.ResourceProperties;
    if (request.RequestType === 'Delete') {
      const group = typeof properties['Group'] === 'string' ? properties['Group'] : '';
      if (!deleteOnRemove(properties) || group === '') return { status: 'SUCCESS', actions: [] };
      const owned = [...names('Tiers', properties['Tiers']).map((tier) => retryTopic(group, tier)), deadLetterTopic(group)];
      const deleted = await withAdmin(await connect(request.brokers), async (admin) => {
        const listed = new Set(await admin.listTopics());
        const present = owned.filter((topic) => listed.has(topic));
        if (present.length > 0) await admin.deleteTopics({ topics: present, timeout: Math.min(30_000, budgetMs) });
        return present;
      });
      log({ level: 'INFO', message: 'topics deleted (topics.deleteOnRemove)', group, deleted });
      return { status: 'SUCCESS', actions: deleted.map((topic) => `deleted ${topic}`) };
    }
    const ensure = ensureRequest(properties);
    const kafka = await connect(request.brokers);
    if (request.RequestType === 'Update') await checkDroppedTiers(kafka, request, ensure, log);
    const result = await withAdmin(kafka, (admin) => ensureTopics(admin, { ...ensure, readyTimeoutMs: Math.max(1_000, Math.min(TOPICS_DEFAULTS.readyTimeoutMs, budgetMs)) }));
    const actions = result.actions.map(describe);
    log({ level: 'INFO', message: 'topics ensured', group: ensure.group, actions });
    return { status: 'SUCCESS', actions };
  };

  return async (request, context) => {
    const remaining = context?.getRemainingTimeInMillis() ?? Number.POSITIVE_INFINITY;
    const budgetMs = Math.max(1_000, Math.min(request.budgetMs, remaining) - ANSWER_MARGIN_MS);
    const group = typeof request.ResourceProperties?.['Group'] === 'string' ? String(request.ResourceProperties['Group']) : '';
    try {
      return await untilAborted(work(request, budgetMs), deadlineSignal(budgetMs), () => new Error(`not done within ${Math.round(budgetMs / 1000)} s`));
    } catch (error) {
      const where = context?.logStreamName === undefined ? '' : ` (worker log stream ${context.logStreamName})`;
      const reason = `${failureReason(error)}${where}`;
      log({ level: 'ERROR', message: request.RequestType === 'Delete' ? 'topics not deleted' : 'topics not ensured', group, reason });
      return { status: 'FAILED', reason };
    }
  };
}

/**
 * An update that drops retry tiers is refused while copies wait in a dropped tier's topic (they would never run); a
 * rollback goes through, the waiting copies named in a warning.
 */
async function checkDroppedTiers(kafka: Kafka, request: TopicsWorkRequest, ensure: EnsureTopicsOptions, log: (line: Record<string, unknown>) => void): Promise<void> {
  const dropped = names('Tiers', request.OldResourceProperties?.['Tiers']).filter((tier) => !(ensure.tiers ?? []).includes(tier));
  if (dropped.length === 0) return;
  await withAdmin(kafka, async (admin) => {
    const waiting = await strandedTiers(admin, ensure.group, dropped);
    if (waiting.length === 0) return;
    if (request.rollback === true) {
      // The rollback goes through: refusing would leave the stack UPDATE_ROLLBACK_FAILED. The copies stay in the
      // dropped tier's topic (nothing is deleted), named in the log for recovery by hand.
      log({ level: 'WARN', message: 'rollback drops retry tiers while records wait in them', group: ensure.group, waiting });
      return;
    }
    throw new ConfigError(
      `retry tiers dropped or renamed while records wait in them, which would never run without their trigger: ${waiting.join('; ')}. ` +
        'Keep the tier until its trigger has read them (its lag is 0), then drop it',
    );
  });
}

/**
 * A retry tier dropped (or renamed: dropped and added) by an update loses its trigger: copies still waiting in its
 * topic would never run, and their lanes stay blocked. Each dropped tier with copies its trigger has not read, named
 * with its topic and count; once the tier's trigger has read them all, none. A check that cannot be made (a refused
 * group read, a broker error) throws Kafka's answer.
 */
async function strandedTiers(admin: Admin, group: string, tiers: readonly string[]): Promise<string[]> {
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
  return waiting;
}

// Built on the first request so that importing this module (tests, the plugin) reads no environment.
let deployed: ReturnType<typeof topicsWorkerHandler> | undefined;

/** The Lambda handler the plugin deploys as the topics worker (invoked by the topics provider only). */
export const handler = async (request: TopicsWorkRequest, context?: TopicsContext): Promise<TopicsWorkResult> => {
  deployed ??= topicsWorkerHandler();
  return deployed(request, context);
};
