import { ENV } from '../options/constants';
import type { FunctionPlan } from './plan';

// The template side of a group's topics resource (its handler is topics-handler.ts). Pure.

export const TOPICS_RESOURCE_TYPE = 'Custom::KafkaLanesTopics';
/** What `Fn::GetAtt` reads: the brokers, comma-separated, of the listener the group's clients use. */
export const BROKERS_ATTRIBUTE = 'BootstrapBrokers';
/** Seconds CloudFormation waits for an answer beyond the function's own timeout (the default is an hour). */
const ANSWER_GRACE_SECONDS = 60;

/** The resource, and the environments that change with it. */
export interface TopicsResourceParts {
  readonly logicalId: string;
  readonly resource: { readonly Type: string; readonly Properties: Record<string, unknown> };
  /** Added to the handler's environment. */
  readonly handlerEnvironment: Record<string, unknown>;
  /** Removed from the handler's environment. */
  readonly removed: readonly string[];
  /** The committer's whole environment. */
  readonly committerEnvironment: Record<string, unknown>;
}

/**
 * The group's `Custom::KafkaLanesTopics` resource, served by its topics function, and where the group's functions
 * find the brokers when only the MSK cluster ARN is configured. None asks MSK for them at run time
 * (`GetBootstrapBrokers` needs an MSK API endpoint a NAT-less VPC may not offer): the handler takes them from its
 * event when they serve its producers' listener, and otherwise, like the scheduled committer (which has no event),
 * from the environment, where CloudFormation puts what the topics resource answered once at deploy time.
 *
 * @example
 * topicsResource(plan, { functionLogicalId: 'OrdersTopicsLambdaFunction', resourceLogicalId: 'OrdersKafkaLanesTopics' });
 * // { resource: { Type: 'Custom::KafkaLanesTopics', Properties: { ServiceToken: { 'Fn::GetAtt': [...] }, Group, Tiers, ... } }, committerEnvironment: { KAFKA_LANES_BROKERS: { 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] }, ... } }
 */
export function topicsResource(plan: FunctionPlan, ids: { functionLogicalId: string; resourceLogicalId: string }): TopicsResourceParts {
  const timeout = Number(plan.topics.definition.timeout ?? 300);
  const resource = {
    Type: TOPICS_RESOURCE_TYPE,
    Properties: {
      ServiceToken: { 'Fn::GetAtt': [ids.functionLogicalId, 'Arn'] },
      ServiceTimeout: String(timeout + ANSWER_GRACE_SECONDS),
      ...plan.topics.properties,
    },
  };
  const environment = plan.environment;
  const committer = plan.committer?.definition.environment ?? environment;
  if (environment[ENV.mskClusterArn] === undefined || environment[ENV.brokers] !== undefined) {
    return { logicalId: ids.resourceLogicalId, resource, handlerEnvironment: {}, removed: [], committerEnvironment: { ...committer } };
  }
  const brokers = { 'Fn::GetAtt': [ids.resourceLogicalId, BROKERS_ATTRIBUTE] };
  const { [ENV.mskClusterArn]: _arn, ...withoutArn } = committer;
  return {
    logicalId: ids.resourceLogicalId,
    resource,
    handlerEnvironment: plan.eventBrokers ? {} : { [ENV.brokers]: brokers },
    removed: [ENV.mskClusterArn],
    committerEnvironment: { ...withoutArn, [ENV.brokers]: brokers },
  };
}

/**
 * A group's triggers are made once its topics are (`DependsOn` the group's topics resource), so a trigger's first poll
 * finds its topic. `topicsByFunction`: the topics resource of each handler, by the handler's logical ID.
 */
export function triggersAfterTopics(
  resources: Record<string, { Type: string; Properties: Record<string, unknown>; DependsOn?: string | string[] }>,
  topicsByFunction: ReadonlyMap<string, string>,
): void {
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const target = (resource.Properties['FunctionName'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
    const topics = typeof target === 'string' ? topicsByFunction.get(target) : undefined;
    if (topics === undefined) continue;
    const after = resource.DependsOn === undefined ? [] : Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn];
    if (!after.includes(topics)) resource.DependsOn = [...after, topics];
  }
}
