import { ENV } from '../options/constants';
import { AWS_LIMITS } from './config';
import type { FunctionFacts, FunctionPlan, FunctionView, ServiceView, TriggerSettings } from './types';

// The retry function `<function>Retry` (plan.ts): the handler's code as a Lambda durable function, whose triggers are the
// retry tiers'. A copy not yet due waits in a suspended durable execution, billed no compute (docs/deploy.md). Pure.

/** The framework's runtime for a function and service that name none (osls 4: `nodejs24.x`). */
const DEFAULT_RUNTIME = 'nodejs24.x';

export const retryKey = (functionKey: string): string => `${functionKey}Retry`;
export const retryName = (name: string): string => `${name}-retry`;
export const retryDescription = (group: string): string =>
  `kafka-lanes retry function of group ${group}: runs the retry tiers' copies, each waiting suspended until it is due`.slice(0, AWS_LIMITS.descriptionLength);

/**
 * The settings of one retry tier's trigger: the source trigger's, read from the topic's start (copies written before the
 * trigger first polls must not be skipped), in a consumer group of the topic's name (a group id is unique among Kafka
 * event sources), without the source's filters and starting timestamp.
 *
 * @example
 * retryTriggerSettings({ arn, topic: 'orders', batchSize: 500 }, 'orders-svc.retry.5s');
 * // { arn, topic: 'orders-svc.retry.5s', batchSize: 500, startingPosition: 'TRIM_HORIZON', consumerGroupId: 'orders-svc.retry.5s' }
 */
export function retryTriggerSettings(settings: TriggerSettings, topic: string): TriggerSettings {
  const { filterPatterns: _filters, startingPositionTimestamp: _timestamp, ...kept } = settings;
  return { ...kept, topic, startingPosition: 'TRIM_HORIZON', consumerGroupId: topic };
}

/**
 * What the retry function would refuse: a runtime Lambda durable functions do not support, or a durable execution
 * shorter than one invocation of the function (an invocation must fit in its execution).
 */
export function retryFunctionProblems(service: ServiceView, { where, fn, timeout, durableConfig }: FunctionFacts): string[] {
  const problems: string[] = [];
  const { executionTimeout } = durableConfig;
  const runtime = fn['runtime'] ?? service.providerRuntime ?? DEFAULT_RUNTIME;
  if (fn['image'] === undefined && !(AWS_LIMITS.durableRuntimes as readonly unknown[]).includes(runtime)) {
    problems.push(
      `${fn['runtime'] === undefined ? 'provider.runtime' : `${where}.runtime`} (the runtime of the retry function kafka-lanes adds, a Lambda durable function): ` +
        `expected one of ${AWS_LIMITS.durableRuntimes.join(', ')}, got ${String(runtime)}`,
    );
  }
  if (executionTimeout < timeout) {
    problems.push(
      `${where}.kafkaLanes.retry.executionTimeout: expected at least the function's timeout, ${timeout} seconds (one invocation of the retry function runs inside its durable execution), got ${executionTimeout}`,
    );
  }
  return problems;
}

/** What the retry function does not take from the handler's definition, and why. */
const NOT_INHERITED: Readonly<Record<string, string>> = {
  name: 'a name of its own',
  description: 'a description of its own',
  events: "the retry tiers' triggers instead",
  kafkaLanes: 'the handler carries the block',
  durableConfig: 'set from the block',
  provisionedConcurrency: 'paid per function: not doubled unasked',
  reservedConcurrency: 'a reservation of its own, not a second copy of the handler\'s',
  snapStart: 'not offered for Node.js durable functions',
  destinations: 'durable functions take no destinations',
  onError: 'asynchronous invocations only; an event source mapping invokes synchronously',
  maximumRetryAttempts: 'asynchronous invocations only; refused with durableConfig',
  maximumEventAge: 'asynchronous invocations only',
  url: 'the handler is not an HTTP endpoint',
};

/**
 * The retry function's definition: the handler's (code, runtime, memory, timeout, VPC, layers, role, environment: the
 * same handler, bundle and settings) but for what `NOT_INHERITED` lists, with its name, its triggers (the retry
 * tiers'), its `durableConfig` and the execution timeout in its environment (the handler reads it to know how long a
 * copy may wait suspended). Pure.
 *
 * @example
 * retryDefinition({ handler: 'src/orders.handler', timeout: 120, events: [...] }, plan);
 * // { handler: 'src/orders.handler', timeout: 120, name: 'shop-prod-orders-retry', events: plan.retryTriggers, durableConfig: { executionTimeout: 900, ... }, ... }
 */
export function retryDefinition(handler: FunctionView, plan: FunctionPlan): FunctionView {
  const inherited = Object.fromEntries(Object.entries(handler).filter(([key]) => NOT_INHERITED[key] === undefined));
  return {
    ...inherited,
    name: plan.retry.name,
    description: plan.retry.description,
    events: plan.retryTriggers.map((trigger) => ({ ...trigger }) as Record<string, unknown>),
    durableConfig: { ...plan.retry.durableConfig },
    environment: { ...handler.environment, [ENV.retryExecutionTimeout]: String(plan.retry.durableConfig.executionTimeout) },
  };
}
