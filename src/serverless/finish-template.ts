import { addAlarms } from './alarms-hook';
import { declaredTemplate } from './checks';
import { orderAfter, POLLER_SERVICES, servicesCalled, stackEndpoints, type OrderedResource } from './endpoint-order';
import { afterRetryTriggers, compileResponseTypes, compileSchemaRegistries, keepZeroBatchingWindows, mappingTarget, type Serverless } from './framework';
import { keepRetryTriggerIds } from './trigger-ids';
import { dropImpliedDependsOn } from './implied-depends-on';
import type { FunctionPlan } from './types';
import { triggersAfterTopics } from './topics-resource';

/** What the plugin made at `initialize` that the template's last pass reads. */
export interface MadeResources {
  /** Each group's topics resource, by the logical ID of its handler and of its retry function. */
  readonly topicsResources: ReadonlyMap<string, string>;
  /** The role the plugin made for a function, by the function's key (a resource of `resources:`, merged later). */
  readonly roles: ReadonlyMap<string, { DependsOn?: string | string[] }>;
}

type CompiledResource = OrderedResource & { Type: string; Properties: Record<string, unknown> };

/**
 * The plugin's pass over the template the framework compiled (`after:package:compileEvents`): the triggers' response
 * types, schema registries and batching windows, each trigger after its group's topics, the retry tiers' triggers under the logical IDs they
 * had on the handler (an upgrade moves them in place) with the handler's role updated after them, the functions and
 * triggers after the stack's endpoints they need, the alarms and dashboards, and no `DependsOn` a `Ref` already implies.
 */
export function finishTemplate(serverless: Serverless, plans: readonly FunctionPlan[], made: MadeResources): void {
  const resources = serverless.service.provider.compiledCloudFormationTemplate.Resources;
  compileResponseTypes(serverless, plans);
  compileSchemaRegistries(serverless, plans);
  keepZeroBatchingWindows(serverless);
  triggersAfterTopics(resources, made.topicsResources);
  const retryTriggers = keepRetryTriggerIds(serverless, plans);
  for (const plan of plans) {
    const role = made.roles.get(plan.functionKey);
    if (role !== undefined) afterRetryTriggers(role, retryTriggers.get(plan.group) ?? []);
  }
  orderAfterEndpoints(serverless, plans);
  addAlarms(serverless, plans);
  dropImpliedDependsOn(resources);
}

/**
 * On create, each group's functions in a VPC come after the stack's interface endpoints of the AWS APIs they call
 * (their secrets' service), and their triggers after its Lambda and STS endpoints, which the triggers' pollers use
 * (endpoint-order.ts). Endpoints the service declares under `resources:` only: an existing VPC's are already there.
 */
function orderAfterEndpoints(serverless: Serverless, plans: readonly FunctionPlan[]): void {
  const { service } = serverless;
  const endpoints = stackEndpoints(declaredTemplate((service as unknown as { resources?: unknown }).resources).resources);
  if (endpoints.length === 0) return;
  const naming = serverless.getProvider('aws').naming;
  const resources = service.provider.compiledCloudFormationTemplate.Resources as Record<string, CompiledResource>;
  for (const plan of plans) {
    for (const key of [plan.functionKey, plan.retry.key, plan.committer?.key, plan.topics.key, plan.producer?.key]) {
      const fn = key === undefined ? undefined : resources[naming.getLambdaLogicalId(key)];
      if (fn === undefined || fn.Properties['VpcConfig'] === undefined) continue;
      orderAfter(fn, endpoints, servicesCalled((fn.Properties['Environment'] as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {}));
    }
    const triggered = [plan.functionKey, plan.retry.key].map((key) => naming.getLambdaLogicalId(key));
    for (const resource of Object.values(resources)) {
      if (resource.Type === 'AWS::Lambda::EventSourceMapping' && triggered.includes(mappingTarget(resource.Properties) ?? '')) orderAfter(resource, endpoints, POLLER_SERVICES);
    }
  }
}
