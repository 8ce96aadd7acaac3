import { ENV } from '../options/constants';
import { mappingTarget } from './framework';
import type { FunctionPlan } from './types';

// The template side of a group's topics resource (its provider is topics-provider.ts, its worker topics-handler.ts). Pure.

export const TOPICS_RESOURCE_TYPE = 'Custom::KafkaLanesTopics';
/** What `Fn::GetAtt` reads: the brokers, comma-separated, of the listener the group's clients use. */
export const BROKERS_ATTRIBUTE = 'BootstrapBrokers';
/** The produce function's variable naming the topic it writes (the source topic). */
export const PRODUCE_TOPIC_VARIABLE = 'KAFKA_LANES_PRODUCE_TOPIC';
/** The provider's variable naming the worker it invokes. */
export const TOPICS_WORKER_VARIABLE = 'KAFKA_LANES_TOPICS_WORKER';
/** The physical ID of a group's topics: the same for every answer while the group is the same. */
export const topicsPhysicalId = (group: string): string => `kafka-lanes-topics:${group}`;

/** `DeleteOnRemove: 'true'`: a `Delete` deletes the group's retry and dead-letter topics (the worker's). */
export const deleteOnRemove = (properties: Readonly<Record<string, unknown>>): boolean => String(properties['DeleteOnRemove'] ?? 'false') === 'true';

/** Seconds CloudFormation waits for an answer beyond the provider's own timeout (the default is an hour). */
const ANSWER_GRACE_SECONDS = 60;
/** Seconds the provider runs beyond the worker's timeout: it always outlives the worker, so it always answers. */
export const PROVIDER_EXTRA_SECONDS = 60;

/** The resource, and the environments that change with it. */
export interface TopicsResourceParts {
  readonly logicalId: string;
  readonly resource: { readonly Type: string; readonly Properties: Record<string, unknown> };
  /** The provider's environment: the worker's name (a `Ref`, so the provider is made after the worker, deleted before). */
  readonly providerEnvironment: Record<string, unknown>;
  /** Added to the handler's environment. */
  readonly handlerEnvironment: Record<string, unknown>;
  /** Removed from the handler's environment. */
  readonly removed: readonly string[];
  /** The committer's whole environment. */
  readonly committerEnvironment: Record<string, unknown>;
}

/**
 * The group's `Custom::KafkaLanesTopics` resource, served by its provider (outside the VPC), and where the group's
 * functions find the brokers when only the MSK cluster is configured: from the resource's answer (`Fn::GetAtt ...
 * BootstrapBrokers`), the brokers the provider asked of MSK and the worker used. One source for the handler, the
 * committer and the worker; no function asks MSK at run time, and the handler does not take them from its event (AWS
 * does not say which listener the event's `bootstrapServers` name).
 *
 * The cluster is among the resource's properties (`Cluster` with its `Listener`, or `Brokers`): a cluster the stack
 * replaces is a property change, so the resource gets an `Update`, ensures the topics on the new cluster and answers
 * its brokers, which CloudFormation then gives the functions.
 *
 * @example
 * topicsResource(plan, { providerLogicalId: 'OrdersTopicsLambdaFunction', workerLogicalId: 'OrdersTopicsVpcLambdaFunction', resourceLogicalId: 'OrdersKafkaLanesTopics' });
 * // { resource: { Type: 'Custom::KafkaLanesTopics', Properties: { ServiceToken: { 'Fn::GetAtt': ['OrdersTopicsLambdaFunction', 'Arn'] }, Group, Tiers, Cluster, Listener, ... } }, ... }
 */
export function topicsResource(plan: FunctionPlan, ids: { providerLogicalId: string; workerLogicalId: string; resourceLogicalId: string }): TopicsResourceParts {
  const timeout = Number(plan.topics.provider.timeout ?? 360);
  const resource = {
    Type: TOPICS_RESOURCE_TYPE,
    Properties: {
      ServiceToken: { 'Fn::GetAtt': [ids.providerLogicalId, 'Arn'] },
      ServiceTimeout: String(timeout + ANSWER_GRACE_SECONDS),
      ...plan.topics.properties,
    },
  };
  const providerEnvironment = { [TOPICS_WORKER_VARIABLE]: { Ref: ids.workerLogicalId } };
  const environment = plan.environment;
  const committer = plan.committer?.definition.environment ?? environment;
  if (environment[ENV.mskClusterArn] === undefined || environment[ENV.brokers] !== undefined) {
    return { logicalId: ids.resourceLogicalId, resource, providerEnvironment, handlerEnvironment: {}, removed: [], committerEnvironment: { ...committer } };
  }
  const brokers = { 'Fn::GetAtt': [ids.resourceLogicalId, BROKERS_ATTRIBUTE] };
  const { [ENV.mskClusterArn]: _arn, ...withoutArn } = committer;
  return {
    logicalId: ids.resourceLogicalId,
    resource,
    providerEnvironment,
    handlerEnvironment: { [ENV.brokers]: brokers },
    removed: [ENV.mskClusterArn],
    committerEnvironment: { ...withoutArn, [ENV.brokers]: brokers },
  };
}

/**
 * A group's triggers are made once its topics are (`DependsOn` the group's topics resource), so a trigger's first poll
 * finds its topic. `topicsByFunction`: the topics resource of each handler and retry function, by its logical ID.
 */
export function triggersAfterTopics(
  resources: Record<string, { Type: string; Properties: Record<string, unknown>; DependsOn?: string | string[] }>,
  topicsByFunction: ReadonlyMap<string, string>,
): void {
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const target = mappingTarget(resource.Properties);
    const topics = target === undefined ? undefined : topicsByFunction.get(target);
    if (topics === undefined) continue;
    const after = resource.DependsOn === undefined ? [] : Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn];
    if (!after.includes(topics)) resource.DependsOn = [...after, topics];
  }
}
