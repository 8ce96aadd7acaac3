import { mskClusterNameToken, type Serverless } from './framework';
import type { FunctionPlan, ServiceView, TriggerEvent } from './types';

// The logical IDs of a group's triggers in the template: no two of a function alike, and each retry tier's kept from
// one release to the next.

/**
 * Two triggers of one function with one logical ID: the framework shortens topic names inside the IDs, so long
 * groups give every tier's trigger the same ID and only the last would be deployed.
 */
export function logicalIdCollisions(service: ServiceView, where: string, functionKey: string, triggers: readonly TriggerEvent[]): string[] {
  const logicalIdOf = service.triggerLogicalId;
  if (logicalIdOf === undefined) return [];
  const topicsById = new Map<string, string[]>();
  for (const trigger of triggers) {
    const id = logicalIdOf(functionKey, trigger);
    const topic = ('msk' in trigger ? trigger.msk : trigger.kafka).topic;
    topicsById.set(id, [...(topicsById.get(id) ?? []), topic]);
  }
  return [...topicsById]
    .filter(([, topics]) => topics.length > 1)
    .map(
      ([id, topics]) =>
        `${where}.kafkaLanes.group: expected a group short enough for the triggers' CloudFormation logical IDs to differ ` +
        `(the framework shortens topic names in them), got one ID \`${id}\` for ${topics.map((topic) => `\`${topic}\``).join(', ')}`,
    );
}

/** The logical ID the framework gives a function's Kafka trigger. */
function triggerLogicalId(serverless: Serverless, functionKey: string, trigger: FunctionPlan['retryTriggers'][number]): string {
  const naming = serverless.getProvider('aws').naming;
  return 'msk' in trigger
    ? naming.getMSKEventLogicalId(functionKey, mskClusterNameToken(trigger.msk.arn), trigger.msk.topic)
    : naming.getKafkaEventLogicalId(functionKey, trigger.kafka.topic);
}

/**
 * Each retry tier's trigger keeps the logical ID it had when the handler carried it (`<Function>EventSourceMapping...`,
 * under the handler's key), so that a stack of an earlier release moves the tier to the retry function in place: an
 * `Update` of the mapping's `FunctionName` (Lambda API reference, `UpdateEventSourceMapping`: "You can change the
 * function that AWS Lambda invokes"), which keeps its UUID, its consumer group and the group's committed offsets. A new
 * logical ID would make CloudFormation create the new mapping before deleting the old one, and a Kafka event source's
 * consumer group id cannot be used by two mappings at once ("must be unique among all your Kafka event sources").
 *
 * @returns the retry triggers' logical IDs, by group.
 */
export function keepRetryTriggerIds(serverless: Serverless, plans: readonly FunctionPlan[]): Map<string, string[]> {
  const resources = serverless.service.provider.compiledCloudFormationTemplate.Resources;
  const moved = new Map<string, string[]>();
  for (const plan of plans) {
    const ids: string[] = [];
    for (const trigger of plan.retryTriggers) {
      const from = triggerLogicalId(serverless, plan.retry.key, trigger);
      const to = triggerLogicalId(serverless, plan.functionKey, trigger);
      const resource = resources[from];
      if (resource === undefined) continue;
      delete resources[from];
      resources[to] = resource;
      ids.push(to);
    }
    moved.set(plan.group, ids);
  }
  return moved;
}
