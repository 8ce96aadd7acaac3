import { AWS_IAM_MECHANISM, ENV } from '../options/constants';
import { frameworkHandler } from './bundle';
import type { Serverless } from './framework';
import { retryDefinition } from './retry-function';
import type { FunctionPlan, FunctionView } from './types';

// What the plugin writes into the service for a group's plan (plan.ts), at `initialize`: the functions it adds and the
// environment each gets, on AWS and under `serverless offline`.

/** Where the service runs: deployed, or under `serverless offline` with the local Redis it uses there. */
export type Target = { readonly offline: false } | { readonly offline: true; readonly redis: string };

/**
 * Gives the handler its source trigger (in the group) and the group's environment, and adds the retry function, the
 * committer and the produce function (a deployed cluster's: not under `serverless offline`, `kafka-lanes produce` is).
 *
 * @returns the problem of a name kafka-lanes adds that the service already takes (nothing further is written then).
 */
export function addGroupFunctions(functions: Record<string, FunctionView>, plan: FunctionPlan, target: Target): string | undefined {
  const fn = functions[plan.functionKey]!;
  const events = fn.events ?? [];
  const sourceIndex = events.findIndex((event) => 'msk' in event || 'kafka' in event);
  events[sourceIndex] = plan.source as unknown as Record<string, unknown>;
  fn.events = events;
  const environment = target.offline ? offlineEnvironment(plan.environment, target.redis) : plan.environment;
  fn.environment = { ...fn.environment, ...environment };
  const taken = (key: string, what: string): string => `functions.${key}: the name of the ${what} kafka-lanes adds for \`${plan.functionKey}\` is taken`;
  // The retry tiers' triggers are the retry function's: the handler's code as a durable function (plan.ts).
  if (functions[plan.retry.key] !== undefined) return taken(plan.retry.key, 'retry function');
  functions[plan.retry.key] = retryDefinition(fn, plan);
  if (plan.committer !== undefined) {
    if (functions[plan.committer.key] !== undefined) return taken(plan.committer.key, 'committer');
    functions[plan.committer.key] = { ...plan.committer.definition, ...(target.offline ? { environment } : {}), handler: frameworkHandler('committer') };
  }
  if (plan.producer !== undefined && !target.offline) {
    if (functions[plan.producer.key] !== undefined) return taken(plan.producer.key, 'produce function');
    functions[plan.producer.key] = { ...plan.producer.definition, handler: frameworkHandler('produce') };
  }
  return undefined;
}

/**
 * The group's settings under `serverless offline`: a value CloudFormation would resolve at deploy time (the
 * stack's ElastiCache, the MSK cluster) means the local stack here: `custom.kafkaLanes.offline.redis`, and the
 * trigger's local broker (set by the offline trigger); MSK IAM and SCRAM are not used against the local broker,
 * and a Redis AUTH secret goes with the deployed Redis it belongs to (or with a CloudFormation reference).
 */
export function offlineEnvironment(environment: Readonly<Record<string, unknown>>, redis: string): Record<string, unknown> {
  const local: Record<string, unknown> = { ...environment };
  const redisDeployed = typeof local[ENV.redisUrl] === 'object' || typeof local[ENV.redisClusterNodes] === 'object';
  if (redisDeployed || typeof local[ENV.redisAuthSecret] === 'object') delete local[ENV.redisAuthSecret];
  if (redisDeployed) {
    delete local[ENV.redisClusterNodes];
    delete local[ENV.redisTls];
    local[ENV.redisUrl] = redis;
  }
  delete local[ENV.mskClusterArn];
  if (local[ENV.saslMechanism] === AWS_IAM_MECHANISM || local[ENV.saslSecret] !== undefined) delete local[ENV.saslMechanism];
  delete local[ENV.saslSecret];
  delete local[ENV.ssl];
  return local;
}

/**
 * A `KAFKA_LANES_*` variable of the provider CloudFormation resolves at deploy time (an AUTH token from
 * Secrets Manager) has no value under `serverless offline`: unset for the groups' functions (empty counts as
 * unset), not passed on as an object.
 */
export function blankDeployTimeSettings(service: Serverless['service'], plans: readonly FunctionPlan[]): void {
  const provided = service.provider.environment ?? {};
  const blanks = Object.fromEntries(
    Object.entries(provided).filter(([name, value]) => name.startsWith('KAFKA_LANES_') && typeof value === 'object').map(([name]) => [name, '']),
  );
  for (const plan of plans) {
    for (const key of [plan.functionKey, plan.retry.key, ...(plan.committer === undefined ? [] : [plan.committer.key])]) {
      const fn = service.functions[key];
      if (fn !== undefined) fn.environment = { ...blanks, ...fn.environment };
    }
  }
}
