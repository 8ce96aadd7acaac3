import { version } from '../../package.json';
import { isObject } from '../describe';
import { AWS_IAM_MECHANISM, DEFAULTS, ENV } from '../options/constants';
import { retryTopic } from '../options/retry-tiers';
import { resolveKafkaAuth, secretEnvironment, secretProblem, type ResolvedKafkaAuth } from './auth';
import { clusterRegionProblem, endpointProblems, lengthProblem, scheduleProblem, tierOrderProblems } from './checks';
import { logicalIdCollisions } from './trigger-ids';
import { AWS_LIMITS, PLUGIN_DEFAULTS, type FunctionBlock } from './config';
import { retryDescription, retryFunctionProblems, retryKey, retryName, retryTriggerSettings } from './retry-function';
import { PRODUCE_TOPIC_VARIABLE, PROVIDER_EXTRA_SECONDS } from './topics-resource';
import { schemaRegistryEnvironment, schemaRegistryProblems } from './schema-registry';
import type { FunctionPlan, FunctionView, KafkaAuth, ServiceView, TriggerEvent, TriggerSettings } from './types';

/** The variable every Powertools utility reads its service from (the logs' `service`, telemetry.ts). */
const POWERTOOLS_SERVICE_NAME = 'POWERTOOLS_SERVICE_NAME';

const DEFAULT_TIMEOUT_SECONDS = 6;

/** The trigger of an event, if it is a Kafka one. */
export function triggerOf(event: Record<string, unknown>): { kind: 'msk' | 'kafka'; settings: TriggerSettings } | undefined {
  if (isObject(event['msk'])) return { kind: 'msk', settings: event['msk'] as TriggerSettings };
  if (isObject(event['kafka'])) return { kind: 'kafka', settings: event['kafka'] as TriggerSettings };
  return undefined;
}

/**
 * Plans what a function with a `kafkaLanes:` block needs: its group (the block's `group`, else the trigger's
 * `consumerGroupId`, else the function's deployed name), the source trigger's consumer group, the retry function
 * and its trigger per retry tier, the group's settings resolved once (the environment the handler, the retry function
 * and the committer all get), and the scheduled committer. Pure: the plugin applies the plan to the service.
 *
 * Refuses, naming the setting, the limit and the value, what AWS would refuse at deploy time or what every cold
 * start would refuse (see checks.ts).
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
  const durableConfig = {
    executionTimeout: block.retry?.executionTimeout ?? PLUGIN_DEFAULTS.retryExecutionTimeout,
    retentionPeriodInDays: block.retry?.retentionPeriodInDays ?? PLUGIN_DEFAULTS.retryRetentionDays,
  };
  problems.push(...retryFunctionProblems(where, service, fn, timeout, durableConfig.executionTimeout));
  const batchSize = settings.batchSize;
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > AWS_LIMITS.maxBatchSize)) {
    problems.push(`${where}.events.${trigger.kind}.batchSize: expected an integer from 1 to ${AWS_LIMITS.maxBatchSize.toLocaleString('en-US')}, got ${batchSize}`);
  }
  const tiers = block.retryTiers ?? PLUGIN_DEFAULTS.retryTiers;
  problems.push(...tierOrderProblems(`${where}.kafkaLanes.retryTiers`, tiers));
  if (block.redis?.url !== undefined && block.redis.clusterNodes !== undefined) {
    problems.push(`${where}.kafkaLanes.redis: expected \`url\` (one server) or \`clusterNodes\` (a cluster), got both (every cold start would refuse them)`);
  }
  const auth = resolveKafkaAuth(where, trigger.kind, settings, block);
  if ('problems' in auth) problems.push(...auth.problems);
  const redisSecret = secretProblem(`${where}.kafkaLanes.redis.authSecret`, block.redis?.authSecret, ['secretsmanager', 'ssm']);
  if (redisSecret !== undefined) problems.push(redisSecret);
  problems.push(...nameProblems(where, functionKey, fn, name, group, tiers, block));
  const regionProblem = trigger.kind === 'msk' ? clusterRegionProblem(`${where}.events.msk.arn`, settings.arn, service.region) : undefined;
  if (regionProblem !== undefined) problems.push(regionProblem);
  problems.push(...schemaRegistryProblems(`${where}.kafkaLanes.schemaRegistry`, block.schemaRegistry, settings));
  if (service.offline !== true) problems.push(...endpointProblems(endpoints(where, trigger.kind, settings, block)));
  if (problems.length > 0 || 'problems' in auth) return { problems };

  const mode = settings.provisionedPollerConfig === undefined ? 'on-demand' : 'provisioned';
  const source = withSettings(trigger.kind, { ...settings, consumerGroupId: group });
  const retryTriggers = tiers.map((tier) => withSettings(trigger.kind, retryTriggerSettings(settings, retryTopic(group, tier))));
  const collisions = logicalIdCollisions(service, where, functionKey, [source, ...retryTriggers]);
  if (collisions.length > 0) return { problems: collisions };

  const environment = { ...groupEnvironment(trigger.kind, settings, block, { group, tiers, auth, mode }), ...schemaRegistryEnvironment(block.schemaRegistry) };
  const committerBlock = block.committer ?? {};
  const committer =
    committerBlock.enabled === false
      ? undefined
      : {
          key: committerKey(functionKey),
          definition: {
            name: committerName(name),
            description: committerDescription(group),
            timeout: committerBlock.timeout ?? PLUGIN_DEFAULTS.committerTimeout,
            events: [{ schedule: { rate: [committerBlock.schedule ?? PLUGIN_DEFAULTS.committerSchedule], enabled: true } }],
            environment,
            ...(fn.vpc === undefined ? {} : { vpc: fn.vpc }),
          },
        };
  const outputs = block.outputs ?? [];
  // Declared outputs are the contract everywhere: with none declared, every `ctx.send` fails as MSK IAM would refuse it.
  environment[ENV.outputs] = outputs.join(',');
  const retry = { key: retryKey(functionKey), name: retryName(name), description: retryDescription(group), durableConfig };
  const topicsBlock = block.topics ?? {};
  const workerTimeout = PLUGIN_DEFAULTS.topicsTimeout;
  const topics = {
    key: topicsKey(functionKey),
    definition: {
      name: topicsName(name),
      description: `kafka-lanes topics worker of group ${group}: creates the group's topics for its custom resource`.slice(0, AWS_LIMITS.descriptionLength),
      timeout: workerTimeout,
      events: [],
      environment: workerEnvironment(environment),
      ...(fn.vpc === undefined ? {} : { vpc: fn.vpc }),
    },
    provider: {
      key: topicsProviderKey(functionKey),
      name: topicsProviderName(name),
      description: `kafka-lanes topics resource of group ${group}: answers CloudFormation, invokes the topics worker`.slice(0, AWS_LIMITS.descriptionLength),
      timeout: workerTimeout + PROVIDER_EXTRA_SECONDS,
      events: [],
      // Outside any VPC, the provider's own or the service's: it answers CloudFormation at an S3 URL and asks MSK's
      // regional API, both public, whatever the VPC has or is losing (osls leaves a function with `vpc: false` out).
      vpc: false,
    },
    properties: {
      Group: group,
      Tiers: [...tiers],
      Source: settings.topic,
      ...(topicsBlock.partitions === undefined ? {} : { SourcePartitions: String(topicsBlock.partitions) }),
      ...(outputs.length === 0 ? {} : { Outputs: [...outputs] }),
      ...(topicsBlock.retryPartitions === undefined ? {} : { RetryPartitions: String(topicsBlock.retryPartitions) }),
      ...(topicsBlock.replicationFactor === undefined ? {} : { ReplicationFactor: String(topicsBlock.replicationFactor) }),
      DeleteOnRemove: String(topicsBlock.deleteOnRemove ?? false),
      // A kafka-lanes upgrade is an `Update` of the resource: the topics are ensured again by the new release's rules.
      Version: version,
      // The cluster: a new one (a replaced cluster, another ARN, other brokers) is an `Update` of the resource.
      ...(environment[ENV.brokers] !== undefined
        ? { Brokers: environment[ENV.brokers] }
        : { Cluster: environment[ENV.mskClusterArn], Listener: LISTENER_OF_AUTH[auth.auth] }),
    },
  };
  const producer =
    block.produce !== true
      ? undefined
      : {
          key: `${functionKey}Produce`,
          definition: {
            name: `${name}-produce`,
            description: `kafka-lanes producer of group ${group}: writes records to ${settings.topic} and waits for the trigger's commit`.slice(0, AWS_LIMITS.descriptionLength),
            timeout: PLUGIN_DEFAULTS.produceTimeout,
            events: [],
            environment: {
              ...workerEnvironment(environment),
              ...(environment[ENV.brokers] === undefined ? { [ENV.mskClusterArn]: environment[ENV.mskClusterArn] } : { [ENV.brokers]: environment[ENV.brokers] }),
              [PRODUCE_TOPIC_VARIABLE]: settings.topic,
            },
            ...(fn.vpc === undefined ? {} : { vpc: fn.vpc }),
          },
        };
  return { plan: { functionKey, group, tiers, mode, auth: auth.auth, source, retryTriggers, retry, environment, committer, outputs, topics, producer, ...(block.schemaRegistry === undefined ? {} : { schemaRegistry: block.schemaRegistry }) }, problems: [] };
}

/** The MSK listener of each auth (`GetBootstrapBrokers`' field the provider reads). */
const LISTENER_OF_AUTH: Readonly<Record<KafkaAuth, string>> = { iam: 'iam', scram: 'scram', tls: 'tls', none: 'plaintext' };

/**
 * The worker's environment: the group's Kafka auth (TLS, SASL, a SCRAM secret), never Redis (the worker does not
 * reach it, so it neither waits for ElastiCache nor changes with it) nor the brokers (they come with each request).
 */
function workerEnvironment(environment: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const kept = [ENV.group, ENV.saslMechanism, ENV.saslSecret, ENV.ssl];
  return Object.fromEntries(Object.entries(environment).filter(([name]) => (kept as readonly string[]).includes(name)));
}

// The provider keeps the name the topics resource's function always had (`<function>Topics`): CloudFormation does not
// update a custom resource's ServiceToken, so a stack of an earlier version upgrades in place.
const topicsKey = (functionKey: string): string => `${functionKey}TopicsVpc`;
const topicsName = (name: string): string => `${name}-topicsvpc`;
const topicsProviderKey = (functionKey: string): string => `${functionKey}Topics`;
const topicsProviderName = (name: string): string => `${name}-topics`;

const committerKey = (functionKey: string): string => `${functionKey}Committer`;
const committerName = (name: string): string => `${name}-committer`;
const committerDescription = (group: string): string => `kafka-lanes committer of group ${group}: commits the frontier to ${group}.lanes`;

/**
 * The group's settings as the environment `lanes(...)` and the committer read: group, tiers, dead-letter
 * policy, Redis, Kafka (brokers or the MSK cluster, TLS, SASL) and the trigger's mode.
 */
function groupEnvironment(
  kind: 'msk' | 'kafka',
  settings: TriggerSettings,
  block: FunctionBlock,
  resolved: { group: string; tiers: readonly string[]; auth: ResolvedKafkaAuth; mode: FunctionPlan['mode'] },
): Record<string, unknown> {
  const environment: Record<string, unknown> = {};
  const redis = block.redis ?? {};
  if (redis.url !== undefined) environment[ENV.redisUrl] = redis.url;
  if (redis.clusterNodes !== undefined) environment[ENV.redisClusterNodes] = joined(redis.clusterNodes);
  if (redis.tls !== undefined) environment[ENV.redisTls] = String(redis.tls);
  const brokers = block.kafka?.brokers ?? settings.bootstrapServers;
  if (brokers !== undefined) environment[ENV.brokers] = brokers.join(',');
  // Without brokers, the producers and the committer ask MSK for them (GetBootstrapBrokers, once per cold start),
  // for the listener of the auth in use.
  else if (kind === 'msk' && settings.arn !== undefined) environment[ENV.mskClusterArn] = settings.arn;
  if (resolved.auth.auth === 'iam') environment[ENV.saslMechanism] = AWS_IAM_MECHANISM;
  // An MSK ARN picks TLS by default: `none` must say plaintext, `tls` says TLS for a self-managed cluster.
  if (resolved.auth.auth === 'tls') environment[ENV.ssl] = 'true';
  if (resolved.auth.auth === 'none') environment[ENV.ssl] = 'false';
  // Secrets as references only (SCRAM credentials, the Redis AUTH token): read by the functions at cold start.
  Object.assign(environment, secretEnvironment(resolved.auth, block));
  environment[ENV.group] = resolved.group;
  environment[ENV.retryTiers] = resolved.tiers.join(',');
  environment[ENV.deadLetterPolicy] = block.deadLetter?.policy ?? DEFAULTS.deadLetter.policy;
  environment[ENV.ordering] = block.ordering ?? DEFAULTS.ordering;
  // Only a provisioned-mode trigger honours a partial batch response; on demand the invocation must fail.
  environment[ENV.partialBatchResponse] = String(resolved.mode === 'provisioned');
  return environment;
}

/** `host:port` entries as one comma-separated value, joined by CloudFormation when some are known only at deploy. */
function joined(values: ReadonlyArray<unknown> | Record<string, unknown>): unknown {
  if (!Array.isArray(values)) return values;
  if (values.every((value) => typeof value === 'string')) return values.join(',');
  return { 'Fn::Join': [',', values] };
}

/** Names AWS limits: function names, the committer's description, the retry triggers' consumer group ids. */
function nameProblems(
  where: string,
  functionKey: string,
  fn: FunctionView,
  name: string,
  group: string,
  tiers: readonly string[],
  block: FunctionBlock,
): string[] {
  const limits = AWS_LIMITS;
  const problems = [lengthProblem(fn.name === undefined ? `${where} (deployed name \`<service>-<stage>-${functionKey}\`)` : `${where}.name`, name, limits.functionNameLength, 'Lambda function names')];
  if (block.committer?.enabled !== false) {
    const key = committerKey(functionKey);
    problems.push(lengthProblem(`functions.${key}.name (the committer kafka-lanes adds, \`<function name>-committer\`)`, committerName(name), limits.functionNameLength, 'Lambda function names'));
    problems.push(lengthProblem(`functions.${key}.description (from the group \`kafkaLanes.group\`)`, committerDescription(group), limits.descriptionLength, 'Lambda descriptions'));
    const schedule = block.committer?.schedule;
    const scheduleIssue = schedule === undefined ? undefined : scheduleProblem(schedule);
    if (scheduleIssue !== undefined) problems.push(`${where}.kafkaLanes.committer.schedule: ${scheduleIssue}`);
  }
  problems.push(lengthProblem(`functions.${retryKey(functionKey)}.name (the retry function kafka-lanes adds, \`<function name>-retry\`)`, retryName(name), limits.functionNameLength, 'Lambda function names'));
  problems.push(lengthProblem(`functions.${topicsKey(functionKey)}.name (the topics worker kafka-lanes adds, \`<function name>-topicsvpc\`)`, topicsName(name), limits.functionNameLength, 'Lambda function names'));
  problems.push(lengthProblem(`functions.${topicsProviderKey(functionKey)}.name (the topics resource's provider kafka-lanes adds, \`<function name>-topics\`)`, topicsProviderName(name), limits.functionNameLength, 'Lambda function names'));
  if (block.produce === true) problems.push(lengthProblem(`functions.${functionKey}Produce.name (the produce function kafka-lanes adds, \`<function name>-produce\`)`, `${name}-produce`, limits.functionNameLength, 'Lambda function names'));
  for (const tier of tiers) {
    problems.push(lengthProblem(`${where}.kafkaLanes.group (the consumer group of retry tier \`${tier}\`, \`<group>.retry.${tier}\`)`, retryTopic(group, tier), limits.consumerGroupIdLength, 'event source mapping consumer group ids'));
  }
  return problems.filter((problem) => problem !== undefined);
}

/** The endpoints a deployed function would connect to, each with the setting that gives it. */
function endpoints(where: string, kind: 'msk' | 'kafka', settings: TriggerSettings, block: FunctionBlock): Array<{ setting: string; value: unknown }> {
  const list: Array<{ setting: string; value: unknown }> = [];
  if (block.redis?.url !== undefined) list.push({ setting: `${where}.kafkaLanes.redis.url`, value: block.redis.url });
  const nodes = block.redis?.clusterNodes;
  if (Array.isArray(nodes)) nodes.forEach((value, index) => list.push({ setting: `${where}.kafkaLanes.redis.clusterNodes.${index}`, value }));
  (block.kafka?.brokers ?? []).forEach((value, index) => list.push({ setting: `${where}.kafkaLanes.kafka.brokers.${index}`, value }));
  (settings.bootstrapServers ?? []).forEach((value, index) => list.push({ setting: `${where}.events.${kind}.bootstrapServers.${index}`, value }));
  return list;
}

function withSettings(kind: 'msk' | 'kafka', settings: TriggerSettings): TriggerEvent {
  return kind === 'msk' ? { msk: settings } : { kafka: settings };
}

/**
 * `POWERTOOLS_SERVICE_NAME`, the service's name, for every function of the groups (handler, retry function, committer, topics provider
 * and worker, produce function), so `ctx.logger` and the framework's logs carry the user's service (telemetry.ts) on
 * AWS and under `serverless offline`. A value of the service's own (`provider.environment`, a function's) is kept.
 *
 * @example
 * nameTheService({ service: 'shop', provider: {}, functions }, plans); // functions.orders.environment.POWERTOOLS_SERVICE_NAME === 'shop'
 */
export function nameTheService(
  service: { readonly service: string; readonly provider: { environment?: Record<string, unknown> }; readonly functions: Record<string, FunctionView | undefined> },
  plans: readonly FunctionPlan[],
): void {
  if (service.provider.environment?.[POWERTOOLS_SERVICE_NAME] !== undefined || service.service === '') return;
  for (const plan of plans) {
    for (const key of [plan.functionKey, plan.retry.key, plan.committer?.key, plan.topics.key, plan.topics.provider.key, plan.producer?.key]) {
      const fn = key === undefined ? undefined : service.functions[key];
      if (fn !== undefined && fn.environment?.[POWERTOOLS_SERVICE_NAME] === undefined) fn.environment = { ...fn.environment, [POWERTOOLS_SERVICE_NAME]: service.service };
    }
  }
}
