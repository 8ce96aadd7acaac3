import { ENV } from '../options/constants';
import { retryTopic } from '../options/retry-tiers';
import { AWS_LIMITS, PLUGIN_DEFAULTS, type FunctionBlock } from './config';

/** A Kafka trigger as serverless.yml writes it (`msk` or `kafka` event); only what the plugin reads or writes. */
export interface TriggerSettings {
  topic: string;
  arn?: unknown;
  bootstrapServers?: string[];
  batchSize?: number;
  maximumBatchingWindow?: number;
  startingPosition?: string;
  startingPositionTimestamp?: number;
  consumerGroupId?: string;
  provisionedPollerConfig?: { minimumPollers?: number; maximumPollers?: number };
  [other: string]: unknown;
}

export type TriggerEvent = { msk: TriggerSettings } | { kafka: TriggerSettings };

export interface FunctionView {
  name?: string;
  handler?: string;
  timeout?: number;
  events?: Array<Record<string, unknown>>;
  environment?: Record<string, unknown>;
  vpc?: unknown;
  kafkaLanes?: unknown;
  [other: string]: unknown;
}

export interface ServiceView {
  service: string;
  stage: string;
  providerTimeout?: number;
}

/** What the plugin adds for one function with a `kafkaLanes:` block. */
export interface FunctionPlan {
  readonly functionKey: string;
  readonly group: string;
  readonly tiers: readonly string[];
  /** `provisioned`: the trigger has `provisionedPollerConfig`, so it can report batch item failures. */
  readonly mode: 'provisioned' | 'on-demand';
  /** The source trigger, with its `consumerGroupId` set to the group. */
  readonly source: TriggerEvent;
  /** One trigger per retry tier, on the same handler. */
  readonly retryTriggers: readonly TriggerEvent[];
  readonly environment: Readonly<Record<string, string>>;
  readonly committer: { readonly key: string; readonly definition: FunctionView } | undefined;
}

const DEFAULT_TIMEOUT_SECONDS = 6;

/** The trigger of an event, if it is a Kafka one. */
export function triggerOf(event: Record<string, unknown>): { kind: 'msk' | 'kafka'; settings: TriggerSettings } | undefined {
  if (isObject(event['msk'])) return { kind: 'msk', settings: event['msk'] as TriggerSettings };
  if (isObject(event['kafka'])) return { kind: 'kafka', settings: event['kafka'] as TriggerSettings };
  return undefined;
}

/**
 * Plans what a function with a `kafkaLanes:` block needs: its group (the block's `group`, else the trigger's
 * `consumerGroupId`, else the function's deployed name), the source trigger's consumer group, one trigger per
 * retry tier on the same handler, the environment `lanes(...)` reads, and the scheduled committer. Pure: the
 * plugin applies the plan to the service.
 *
 * @returns the plan, or the problems found (each naming the setting, what was expected and what was given).
 * @example
 * planFunction({ service: 'shop', stage: 'dev' }, 'orders', { events: [{ msk: { arn, topic: 'orders' } }] }, {});
 * // { plan: { group: 'shop-dev-orders', retryTriggers: [{ msk: { topic: 'shop-dev-orders.retry.5s', ... } }, ...], ... } }
 */
export function planFunction(
  service: ServiceView,
  functionKey: string,
  fn: FunctionView,
  block: FunctionBlock,
): { plan?: FunctionPlan; problems: string[] } {
  const where = `functions.${functionKey}`;
  const problems: string[] = [];
  const triggers = (fn.events ?? []).map(triggerOf).filter((trigger) => trigger !== undefined);
  if (triggers.length !== 1) {
    problems.push(
      `${where}: a function with \`kafkaLanes\` needs exactly one \`msk\` or \`kafka\` event (its retry triggers are added for it), got ${triggers.length}`,
    );
    return { problems };
  }
  const trigger = triggers[0]!;
  const settings = trigger.settings;
  const name = fn.name ?? `${service.service}-${service.stage}-${functionKey}`;
  const group = block.group ?? settings.consumerGroupId ?? name;
  if (settings.consumerGroupId !== undefined && settings.consumerGroupId !== group) {
    problems.push(
      `${where}.events.${trigger.kind}.consumerGroupId: expected the kafkaLanes group \`${group}\` (every framework name derives from it), got \`${settings.consumerGroupId}\``,
    );
  }
  const timeout = fn.timeout ?? service.providerTimeout ?? DEFAULT_TIMEOUT_SECONDS;
  if (timeout > AWS_LIMITS.kafkaTimeoutSeconds) {
    problems.push(`${where}.timeout: expected at most ${AWS_LIMITS.kafkaTimeoutSeconds} seconds (14 minutes, the limit for a Kafka trigger), got ${timeout}`);
  }
  const batchSize = settings.batchSize;
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > AWS_LIMITS.maxBatchSize)) {
    problems.push(`${where}.events.${trigger.kind}.batchSize: expected an integer from 1 to ${AWS_LIMITS.maxBatchSize.toLocaleString('en-US')}, got ${batchSize}`);
  }
  if (problems.length > 0) return { problems };

  const tiers = block.retryTiers ?? PLUGIN_DEFAULTS.retryTiers;
  const mode = settings.provisionedPollerConfig === undefined ? 'on-demand' : 'provisioned';
  const source = withSettings(trigger.kind, { ...settings, consumerGroupId: group });
  const retryTriggers = tiers.map((tier) => {
    const topic = retryTopic(group, tier);
    const { filterPatterns: _filters, startingPositionTimestamp: _timestamp, ...kept } = settings;
    // A retry topic is read from its start: copies written before the trigger first polls must not be skipped.
    // Each trigger has a consumer group of its own (a group id is unique among Kafka event sources).
    return withSettings(trigger.kind, { ...kept, topic, startingPosition: 'TRIM_HORIZON', consumerGroupId: topic });
  });

  const connection: Record<string, string> = {};
  if (block.redis?.url !== undefined) connection[ENV.redisUrl] = block.redis.url;
  if (block.redis?.clusterNodes !== undefined) connection[ENV.redisClusterNodes] = block.redis.clusterNodes.join(',');
  const brokers = block.kafka?.brokers ?? settings.bootstrapServers;
  if (brokers !== undefined) connection[ENV.brokers] = brokers.join(',');
  // Without brokers, the producers and the committer ask MSK for them (GetBootstrapBrokers, once per cold start).
  else if (trigger.kind === 'msk' && typeof settings.arn === 'string') connection[ENV.mskClusterArn] = settings.arn;
  const environment = {
    ...connection,
    [ENV.group]: group,
    [ENV.retryTiers]: tiers.join(','),
    // Only a provisioned-mode trigger honours a partial batch response; on demand the invocation must fail.
    [ENV.partialBatchResponse]: String(mode === 'provisioned'),
  };

  const committerBlock = block.committer ?? {};
  const committer =
    committerBlock.enabled === false
      ? undefined
      : {
          key: `${functionKey}Committer`,
          definition: {
            name: `${name}-committer`,
            description: `kafka-lanes committer of group ${group}: commits the frontier to ${group}.lanes`,
            timeout: committerBlock.timeout ?? PLUGIN_DEFAULTS.committerTimeout,
            events: [{ schedule: { rate: [committerBlock.schedule ?? PLUGIN_DEFAULTS.committerSchedule], enabled: true } }],
            environment: { ...connection, [ENV.group]: group },
            ...(fn.vpc === undefined ? {} : { vpc: fn.vpc }),
          },
        };
  return { plan: { functionKey, group, tiers, mode, source, retryTriggers, environment, committer }, problems: [] };
}

function withSettings(kind: 'msk' | 'kafka', settings: TriggerSettings): TriggerEvent {
  return kind === 'msk' ? { msk: settings } : { kafka: settings };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * IAM statements the functions of a plan need beside what the framework adds for a trigger: MSK IAM
 * authentication (`kafka-cluster:*` on the cluster, its topics and groups) for the hand-off producers and
 * the committer, and the network interface actions a function in a VPC needs.
 */
export function iamStatements(plans: readonly FunctionPlan[]): Array<Record<string, unknown>> {
  const clusterResources: unknown[] = [];
  for (const plan of plans) {
    const settings = 'msk' in plan.source ? plan.source.msk : undefined;
    if (settings === undefined) continue;
    const arn = settings.arn;
    if (typeof arn === 'string') {
      // arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid> -> its topic/... and group/... resources.
      const match = /^(arn:[^:]+:kafka:[^:]*:[^:]*:)cluster\/(.+)$/.exec(arn);
      if (match === null) clusterResources.push(arn);
      else clusterResources.push(arn, `${match[1]}topic/${match[2]}/*`, `${match[1]}group/${match[2]}/*`);
    } else {
      clusterResources.push('*');
    }
  }
  const statements: Array<Record<string, unknown>> = [];
  if (clusterResources.length > 0) {
    const resources = clusterResources.includes('*') ? ['*'] : [...new Set(clusterResources.map(String))];
    statements.push({ Effect: 'Allow', Action: ['kafka-cluster:*'], Resource: resources });
    statements.push({ Effect: 'Allow', Action: ['kafka:GetBootstrapBrokers', 'kafka:DescribeCluster', 'kafka:DescribeClusterV2'], Resource: '*' });
  }
  if (plans.length > 0) {
    statements.push({
      Effect: 'Allow',
      Action: [
        'ec2:CreateNetworkInterface',
        'ec2:DescribeNetworkInterfaces',
        'ec2:DescribeVpcs',
        'ec2:DeleteNetworkInterface',
        'ec2:DescribeSubnets',
        'ec2:DescribeSecurityGroups',
      ],
      Resource: '*',
    });
  }
  return statements;
}
