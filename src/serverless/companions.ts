import { version } from '../../package.json';
import { ENV } from '../options/constants';
import { retryTopic } from '../options/retry-tiers';
import { lengthProblem, scheduleProblem } from './checks';
import { AWS_LIMITS, PLUGIN_DEFAULTS } from './config';
import { retryKey, retryName } from './retry-function';
import { PRODUCE_TOPIC_VARIABLE, PROVIDER_EXTRA_SECONDS } from './topics-resource';
import type { FunctionFacts, FunctionPlan, KafkaAuth } from './types';

// The functions kafka-lanes adds beside a group's handler (plan.ts): the scheduled committer, the topics resource's
// worker and provider, the produce function; their names and definitions, and the names' limits. Pure.

type Environment = Readonly<Record<string, unknown>>;

// The provider keeps the name the topics resource's function always had (`<function>Topics`): CloudFormation does not
// update a custom resource's ServiceToken, so a stack of an earlier version upgrades in place.
const topicsKey = (functionKey: string): string => `${functionKey}TopicsVpc`;
const topicsName = (name: string): string => `${name}-topicsvpc`;
const topicsProviderKey = (functionKey: string): string => `${functionKey}Topics`;
const topicsProviderName = (name: string): string => `${name}-topics`;

const committerKey = (functionKey: string): string => `${functionKey}Committer`;
const committerName = (name: string): string => `${name}-committer`;
const committerDescription = (group: string): string => `kafka-lanes committer of group ${group}: commits the frontier to ${group}.lanes`;

/** The MSK listener of each auth (`GetBootstrapBrokers`' field the provider reads). */
const LISTENER_OF_AUTH: Readonly<Record<KafkaAuth, string>> = { iam: 'iam', scram: 'scram', tls: 'tls', none: 'plaintext' };

/** The function's VPC, given as it is to the companions that reach the brokers. */
const inVpcOf = ({ fn }: FunctionFacts): { vpc?: unknown } => (fn.vpc === undefined ? {} : { vpc: fn.vpc });

/** The scheduled committer (`kafkaLanes.committer`), with the group's environment; none when disabled. */
export function committerOf(facts: FunctionFacts, environment: Environment): FunctionPlan['committer'] {
  const committer = facts.block.committer ?? {};
  if (committer.enabled === false) return undefined;
  return {
    key: committerKey(facts.functionKey),
    definition: {
      name: committerName(facts.name),
      description: committerDescription(facts.group),
      timeout: committer.timeout ?? PLUGIN_DEFAULTS.committerTimeout,
      events: [{ schedule: { rate: [committer.schedule ?? PLUGIN_DEFAULTS.committerSchedule], enabled: true } }],
      environment,
      ...inVpcOf(facts),
    },
  };
}

/** The group's topics resource: its worker in the VPC, its provider outside any, and the resource's properties. */
export function topicsOf(facts: FunctionFacts, environment: Environment, auth: KafkaAuth): FunctionPlan['topics'] {
  const { functionKey, name, group, tiers, settings } = facts;
  const topics = facts.block.topics ?? {};
  const outputs = facts.block.outputs ?? [];
  return {
    key: topicsKey(functionKey),
    definition: {
      name: topicsName(name),
      description: `kafka-lanes topics worker of group ${group}: creates the group's topics for its custom resource`.slice(0, AWS_LIMITS.descriptionLength),
      timeout: PLUGIN_DEFAULTS.topicsTimeout,
      events: [],
      environment: workerEnvironment(environment),
      ...inVpcOf(facts),
    },
    provider: {
      key: topicsProviderKey(functionKey),
      name: topicsProviderName(name),
      description: `kafka-lanes topics resource of group ${group}: answers CloudFormation, invokes the topics worker`.slice(0, AWS_LIMITS.descriptionLength),
      timeout: PLUGIN_DEFAULTS.topicsTimeout + PROVIDER_EXTRA_SECONDS,
      events: [],
      // Outside any VPC, the provider's own or the service's: it answers CloudFormation at an S3 URL and asks MSK's
      // regional API, both public, whatever the VPC has or is losing (osls leaves a function with `vpc: false` out).
      vpc: false,
    },
    properties: {
      Group: group,
      Tiers: [...tiers],
      Source: settings.topic,
      ...(topics.partitions === undefined ? {} : { SourcePartitions: String(topics.partitions) }),
      ...(outputs.length === 0 ? {} : { Outputs: [...outputs] }),
      ...(topics.retryPartitions === undefined ? {} : { RetryPartitions: String(topics.retryPartitions) }),
      ...(topics.replicationFactor === undefined ? {} : { ReplicationFactor: String(topics.replicationFactor) }),
      DeleteOnRemove: String(topics.deleteOnRemove ?? false),
      // A kafka-lanes upgrade is an `Update` of the resource: the topics are ensured again by the new release's rules.
      Version: version,
      // The cluster: a new one (a replaced cluster, another ARN, other brokers) is an `Update` of the resource.
      ...(environment[ENV.brokers] !== undefined ? { Brokers: environment[ENV.brokers] } : { Cluster: environment[ENV.mskClusterArn], Listener: LISTENER_OF_AUTH[auth] }),
    },
  };
}

/** The produce function (`kafkaLanes.produce: true`, produce-handler.ts): in the VPC, writing the source topic only. */
export function producerOf(facts: FunctionFacts, environment: Environment): FunctionPlan['producer'] {
  if (facts.block.produce !== true) return undefined;
  const { functionKey, name, group, settings } = facts;
  return {
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
      ...inVpcOf(facts),
    },
  };
}

/**
 * The worker's environment: the group's Kafka auth (TLS, SASL, a SCRAM secret), never Redis (the worker does not
 * reach it, so it neither waits for ElastiCache nor changes with it) nor the brokers (they come with each request).
 */
function workerEnvironment(environment: Environment): Record<string, unknown> {
  const kept = [ENV.group, ENV.saslMechanism, ENV.saslSecret, ENV.ssl];
  return Object.fromEntries(Object.entries(environment).filter(([name]) => (kept as readonly string[]).includes(name)));
}

/** Names AWS limits: function names, the committer's description, the retry triggers' consumer group ids. */
export function nameProblems({ where, functionKey, fn, name, group, tiers, block }: FunctionFacts): string[] {
  const limits = AWS_LIMITS;
  const functionName = (setting: string, value: string): string | undefined => lengthProblem(setting, value, limits.functionNameLength, 'Lambda function names');
  const problems = [functionName(fn.name === undefined ? `${where} (deployed name \`<service>-<stage>-${functionKey}\`)` : `${where}.name`, name)];
  if (block.committer?.enabled !== false) {
    const key = committerKey(functionKey);
    problems.push(functionName(`functions.${key}.name (the committer kafka-lanes adds, \`<function name>-committer\`)`, committerName(name)));
    problems.push(lengthProblem(`functions.${key}.description (from the group \`kafkaLanes.group\`)`, committerDescription(group), limits.descriptionLength, 'Lambda descriptions'));
    const schedule = block.committer?.schedule;
    const scheduleIssue = schedule === undefined ? undefined : scheduleProblem(schedule);
    if (scheduleIssue !== undefined) problems.push(`${where}.kafkaLanes.committer.schedule: ${scheduleIssue}`);
  }
  problems.push(functionName(`functions.${retryKey(functionKey)}.name (the retry function kafka-lanes adds, \`<function name>-retry\`)`, retryName(name)));
  problems.push(functionName(`functions.${topicsKey(functionKey)}.name (the topics worker kafka-lanes adds, \`<function name>-topicsvpc\`)`, topicsName(name)));
  problems.push(functionName(`functions.${topicsProviderKey(functionKey)}.name (the topics resource's provider kafka-lanes adds, \`<function name>-topics\`)`, topicsProviderName(name)));
  if (block.produce === true) problems.push(functionName(`functions.${functionKey}Produce.name (the produce function kafka-lanes adds, \`<function name>-produce\`)`, `${name}-produce`));
  for (const tier of tiers) {
    problems.push(lengthProblem(`${where}.kafkaLanes.group (the consumer group of retry tier \`${tier}\`, \`<group>.retry.${tier}\`)`, retryTopic(group, tier), limits.consumerGroupIdLength, 'event source mapping consumer group ids'));
  }
  return problems.filter((problem) => problem !== undefined);
}
