import { isObject } from '../describe';
import { AWS_IAM_MECHANISM, DEFAULTS, ENV } from '../options/constants';
import { retryTopic } from '../options/retry-tiers';
import { resolveKafkaAuth, secretEnvironment, secretProblem, type ResolvedKafkaAuth } from './auth';
import { clusterRegionProblem, endpointProblems, tierOrderProblems } from './checks';
import { committerOf, nameProblems, producerOf, topicsOf } from './companions';
import { logicalIdCollisions } from './trigger-ids';
import { AWS_LIMITS, PLUGIN_DEFAULTS, type FunctionBlock } from './config';
import { retryDescription, retryFunctionProblems, retryKey, retryName, retryTriggerSettings } from './retry-function';
import { schemaRegistryEnvironment, schemaRegistryProblems } from './schema-registry';
import type { FunctionFacts, FunctionPlan, FunctionView, ServiceView, TriggerEvent, TriggerSettings } from './types';

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
 * and the committer all get), and the functions added beside it (companions.ts). Pure: the plugin applies the plan.
 *
 * Refuses, naming the setting, the limit and the value, what AWS would refuse at deploy time or what every cold
 * start would refuse (see checks.ts).
 *
 * @returns the plan, or the problems found (each naming the setting, what was expected and what was given).
 * @example
 * planFunction({ service: 'shop', stage: 'dev' }, 'orders', { events: [{ msk: { arn, topic: 'orders' } }] }, {});
 * // { plan: { group: 'shop-dev-orders', retryTriggers: [{ msk: { topic: 'shop-dev-orders.retry.5s', ... } }, ...], ... } }
 */
export function planFunction(service: ServiceView, functionKey: string, fn: FunctionView, block: FunctionBlock): { plan?: FunctionPlan; problems: string[] } {
  const where = `functions.${functionKey}`;
  const triggers = (fn.events ?? []).map(triggerOf).filter((trigger) => trigger !== undefined);
  if (triggers.length !== 1) {
    return {
      problems: [`${where}: a function with \`kafkaLanes\` needs exactly one \`msk\` or \`kafka\` event (its retry triggers are added for it), got ${triggers.length}`],
    };
  }
  const facts = factsOf(service, { where, functionKey, fn, block }, triggers[0]!);
  const auth = resolveKafkaAuth(where, facts.kind, facts.settings, block);
  const problems = [
    ...planProblems(service, facts),
    ...('problems' in auth ? auth.problems : []),
    secretProblem(`${where}.kafkaLanes.redis.authSecret`, block.redis?.authSecret, ['secretsmanager', 'ssm']),
    ...placeProblems(service, facts),
  ].filter((problem) => problem !== undefined);
  if (problems.length > 0 || 'problems' in auth) return { problems };

  const planned = planTriggers(service, facts);
  if ('problems' in planned) return planned;
  const environment = { ...groupEnvironment(facts, auth, planned.mode), ...schemaRegistryEnvironment(block.schemaRegistry) };
  const outputs = block.outputs ?? [];
  // Declared outputs are the contract everywhere: with none declared, every `ctx.send` fails as MSK IAM would refuse it.
  environment[ENV.outputs] = outputs.join(',');
  const { name, group, tiers, durableConfig } = facts;
  const plan: FunctionPlan = {
    functionKey,
    group,
    tiers,
    mode: planned.mode,
    auth: auth.auth,
    source: planned.source,
    retryTriggers: planned.retryTriggers,
    retry: { key: retryKey(functionKey), name: retryName(name), description: retryDescription(group), durableConfig },
    environment,
    committer: committerOf(facts, environment),
    outputs,
    topics: topicsOf(facts, environment, auth.auth),
    producer: producerOf(facts, environment),
    ...(block.schemaRegistry === undefined ? {} : { schemaRegistry: block.schemaRegistry }),
  };
  return { plan, problems: [] };
}

/** What the plan is made from: the function's trigger, its deployed name, its group, tiers and timeouts. */
function factsOf(
  service: ServiceView,
  given: Pick<FunctionFacts, 'where' | 'functionKey' | 'fn' | 'block'>,
  trigger: { kind: 'msk' | 'kafka'; settings: TriggerSettings },
): FunctionFacts {
  const { functionKey, fn, block } = given;
  const name = fn.name ?? `${service.service}-${service.stage}-${functionKey}`;
  return {
    ...given,
    kind: trigger.kind,
    settings: trigger.settings,
    name,
    group: block.group ?? trigger.settings.consumerGroupId ?? name,
    tiers: block.retryTiers ?? PLUGIN_DEFAULTS.retryTiers,
    timeout: fn.timeout ?? service.providerTimeout ?? DEFAULT_TIMEOUT_SECONDS,
    durableConfig: {
      executionTimeout: block.retry?.executionTimeout ?? PLUGIN_DEFAULTS.retryExecutionTimeout,
      retentionPeriodInDays: block.retry?.retentionPeriodInDays ?? PLUGIN_DEFAULTS.retryRetentionDays,
    },
  };
}

/** What the function's own settings refuse: its trigger's group and batch size, its timeout, the retry tiers, Redis. */
function planProblems(service: ServiceView, facts: FunctionFacts): string[] {
  const { where, kind, settings, group, timeout, tiers, block } = facts;
  const problems: string[] = [];
  if (settings.consumerGroupId !== undefined && settings.consumerGroupId !== group) {
    problems.push(
      `${where}.events.${kind}.consumerGroupId: expected the kafkaLanes group \`${group}\` (every framework name derives from it), got \`${settings.consumerGroupId}\``,
    );
  }
  if (timeout > AWS_LIMITS.kafkaTimeoutSeconds) {
    problems.push(`${where}.timeout: expected at most ${AWS_LIMITS.kafkaTimeoutSeconds} seconds (14 minutes, the limit for a Kafka trigger), got ${timeout}`);
  }
  problems.push(...retryFunctionProblems(service, facts));
  const batchSize = settings.batchSize;
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > AWS_LIMITS.maxBatchSize)) {
    problems.push(`${where}.events.${kind}.batchSize: expected an integer from 1 to ${AWS_LIMITS.maxBatchSize.toLocaleString('en-US')}, got ${batchSize}`);
  }
  problems.push(...tierOrderProblems(`${where}.kafkaLanes.retryTiers`, tiers));
  if (block.redis?.url !== undefined && block.redis.clusterNodes !== undefined) {
    problems.push(`${where}.kafkaLanes.redis: expected \`url\` (one server) or \`clusterNodes\` (a cluster), got both (every cold start would refuse them)`);
  }
  return problems;
}

/** What the names, the cluster's region, the schema registry and the endpoints refuse. */
function placeProblems(service: ServiceView, facts: FunctionFacts): string[] {
  const { where, kind, settings, block } = facts;
  const problems = nameProblems(facts);
  const regionProblem = kind === 'msk' ? clusterRegionProblem(`${where}.events.msk.arn`, settings.arn, service.region) : undefined;
  if (regionProblem !== undefined) problems.push(regionProblem);
  problems.push(...schemaRegistryProblems(`${where}.kafkaLanes.schemaRegistry`, block.schemaRegistry, settings));
  if (service.offline !== true) problems.push(...endpointProblems(endpoints(facts)));
  return problems;
}

/** The source trigger in the group, one trigger per retry tier, and the mode they run in; or their IDs' collisions. */
function planTriggers(service: ServiceView, facts: FunctionFacts): Pick<FunctionPlan, 'mode' | 'source' | 'retryTriggers'> | { problems: string[] } {
  const { kind, settings, group, tiers } = facts;
  const mode = settings.provisionedPollerConfig === undefined ? 'on-demand' : 'provisioned';
  const source = withSettings(kind, { ...settings, consumerGroupId: group });
  const retryTriggers = tiers.map((tier) => withSettings(kind, retryTriggerSettings(settings, retryTopic(group, tier))));
  const collisions = logicalIdCollisions(service, facts.where, facts.functionKey, [source, ...retryTriggers]);
  return collisions.length > 0 ? { problems: collisions } : { mode, source, retryTriggers };
}

/**
 * The group's settings as the environment `lanes(...)` and the committer read: group, tiers, dead-letter
 * policy, Redis, Kafka (brokers or the MSK cluster, TLS, SASL) and the trigger's mode.
 */
function groupEnvironment({ kind, settings, block, group, tiers }: FunctionFacts, auth: ResolvedKafkaAuth, mode: FunctionPlan['mode']): Record<string, unknown> {
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
  if (auth.auth === 'iam') environment[ENV.saslMechanism] = AWS_IAM_MECHANISM;
  // An MSK ARN picks TLS by default: `none` must say plaintext, `tls` says TLS for a self-managed cluster.
  if (auth.auth === 'tls') environment[ENV.ssl] = 'true';
  if (auth.auth === 'none') environment[ENV.ssl] = 'false';
  // Secrets as references only (SCRAM credentials, the Redis AUTH token): read by the functions at cold start.
  Object.assign(environment, secretEnvironment(auth, block));
  environment[ENV.group] = group;
  environment[ENV.retryTiers] = tiers.join(',');
  environment[ENV.deadLetterPolicy] = block.deadLetter?.policy ?? DEFAULTS.deadLetter.policy;
  environment[ENV.ordering] = block.ordering ?? DEFAULTS.ordering;
  // Only a provisioned-mode trigger honours a partial batch response; on demand the invocation must fail.
  environment[ENV.partialBatchResponse] = String(mode === 'provisioned');
  return environment;
}

/** `host:port` entries as one comma-separated value, joined by CloudFormation when some are known only at deploy. */
function joined(values: ReadonlyArray<unknown> | Record<string, unknown>): unknown {
  if (!Array.isArray(values)) return values;
  if (values.every((value) => typeof value === 'string')) return values.join(',');
  return { 'Fn::Join': [',', values] };
}

/** The endpoints a deployed function would connect to, each with the setting that gives it. */
function endpoints({ where, kind, settings, block }: FunctionFacts): Array<{ setting: string; value: unknown }> {
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
