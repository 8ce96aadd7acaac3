import { ALARM_TOPIC_ID, planAlarms } from './alarms';
import { functionBlockSchema } from './config';
import type { FunctionPlan } from './types';
import type { Serverless } from './framework';

/** Adds every planned group's alarms and dashboard to the packaged template (the blocks were validated at `initialize`). */
export function addAlarms(serverless: Serverless, plans: readonly FunctionPlan[]): void {
  const { service } = serverless;
  const resources = service.provider.compiledCloudFormationTemplate.Resources;
  const stage = serverless.getProvider('aws').getStage();
  for (const plan of plans) {
    const fn = service.functions[plan.functionKey];
    const block = functionBlockSchema.safeParse(fn?.kafkaLanes ?? {});
    const planned = planAlarms({
        service: service.service,
        stage,
        functionKey: plan.functionKey,
        group: plan.group,
        functionName: String(fn?.['name'] ?? `${service.service}-${stage}-${plan.functionKey}`),
        retryFunctionName: plan.retry.name,
        committerName: plan.committer === undefined ? undefined : String(plan.committer.definition['name']),
        block: block.success ? block.data.alarms : undefined,
    });
    // One topic per service: every group's e-mail subscriptions on it, once each.
    const before = resources[ALARM_TOPIC_ID]?.Properties['Subscription'] as Array<{ Endpoint: string }> | undefined;
    const topic = planned[ALARM_TOPIC_ID];
    if (before !== undefined && topic !== undefined) {
      const added = ((topic.Properties['Subscription'] ?? []) as Array<{ Endpoint: string }>).filter((entry) => !before.some((known) => known.Endpoint === entry.Endpoint));
      topic.Properties['Subscription'] = [...before, ...added];
    }
    Object.assign(resources, planned);
  }
}
