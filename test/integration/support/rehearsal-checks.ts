/**
 * The deploy rehearsal's checks (support/deploy-rehearsal.ts reads the configuration; each check here names what
 * CloudFormation or AWS would do wrong with it). One function per fact a deploy depends on, run in this order.
 */
import type { Scene } from './deploy-rehearsal';

const TOPICS_RESOURCE = 'Custom::KafkaLanesTopics';
/** The longest an event source mapping waits for a durable execution (Lambda developer guide, "durable-invoking-esm"). */
const ESM_DURABLE_SECONDS = 900;
const DURABLE_ACTIONS = ['lambda:CheckpointDurableExecution', 'lambda:GetDurableExecutionState'];
const ARN_PREFIX = 'arn:aws:lambda:eu-west-1:123456789012:function:';

/** A group's topics resource, its provider and its worker, as the template writes them. */
interface TopicsParts {
  readonly id: string;
  readonly group: string;
  readonly provider: string | undefined;
  readonly worker: string | undefined;
}

function topicsResources(scene: Scene): TopicsParts[] {
  return scene.ofType(TOPICS_RESOURCE).map((id) => {
    const token = (scene.properties(id)['ServiceToken'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
    const provider = typeof token === 'string' ? token : undefined;
    const workerRef = provider === undefined ? undefined : (scene.environment(provider)['KAFKA_LANES_TOPICS_WORKER'] as { Ref?: unknown } | undefined)?.Ref;
    const worker = typeof workerRef === 'string' && scene.resources[workerRef]?.Type === 'AWS::Lambda::Function' ? workerRef : undefined;
    return { id, group: String(scene.properties(id)['Group']), provider, worker };
  });
}

/** The functions of a group (every function whose environment names it). */
function groupFunctions(scene: Scene): string[] {
  return scene.ofType('AWS::Lambda::Function').filter((fn) => scene.environment(fn)['KAFKA_LANES_GROUP'] !== undefined);
}

/** Order: what each custom resource needs to work and to answer is in its dependency closure. */
export function customResourceNeeds(scene: Scene): { problems: string[]; needs: Record<string, Record<string, string>> } {
  const problems: string[] = [];
  const needs: Record<string, Record<string, string>> = {};
  for (const id of Object.keys(scene.resources).filter((resource) => scene.exists(resource) && /^Custom::|^AWS::CloudFormation::CustomResource$/.test(scene.resources[resource]!.Type))) {
    const token = (scene.properties(id)['ServiceToken'] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt']?.[0];
    if (typeof token !== 'string') continue;
    const wanted: Record<string, string> = { [token]: 'its provider, which CloudFormation invokes' };
    const add = (fn: string, role: string, calls: Array<{ service: string; what: string }>): void => {
      const roleId = scene.roleOf(fn);
      if (roleId !== undefined) wanted[roleId] = `the role of ${fn} (${role})`;
      if (!scene.inVpc(fn)) return;
      for (const call of calls) {
        const reach = scene.reachOf(fn, call.service, call.what);
        if (typeof reach === 'string') problems.push(`${id}: ${reach}`);
        else Object.assign(wanted, reach);
      }
    };
    add(token, 'provider', [{ service: 's3', what: "its answer to CloudFormation's pre-signed S3 URL" }, ...scene.apisOf(token)]);
    for (const worker of Object.values(scene.environment(token))) {
      const workerId = (worker as { Ref?: unknown } | null)?.Ref;
      if (typeof workerId !== 'string' || scene.resources[workerId]?.Type !== 'AWS::Lambda::Function') continue;
      wanted[workerId] = `the worker ${token} invokes`;
      add(workerId, 'worker', scene.apisOf(workerId));
    }
    const reachable = scene.closure(id);
    for (const [needed, why] of Object.entries(wanted)) {
      if (!reachable.has(needed)) problems.push(`${id} does not depend on ${needed} (${why}): CloudFormation may create it after ${id} and delete it before ${id}'s Delete is answered`);
    }
    needs[id] = wanted;
  }
  return { problems, needs };
}

/** The topics resource's provider answers CloudFormation whatever the VPC has or is losing: from outside any VPC. */
function providersOutsideVpc(scene: Scene): string[] {
  return topicsResources(scene)
    .filter((parts) => parts.provider !== undefined && scene.inVpc(parts.provider))
    .map(
      (parts) =>
        `${parts.provider} (the provider of ${parts.id}) is in a VPC: its answer to CloudFormation then depends on the VPC's routes and endpoints, which a stack's deletion or rollback may delete first (or a NAT gateway outside the stack may lose), and the resource waits for its ServiceTimeout`,
    );
}

/** The provider may invoke its worker (by the worker's ARN). */
function providersInvokeWorkers(scene: Scene): string[] {
  const problems: string[] = [];
  for (const parts of topicsResources(scene)) {
    if (parts.provider === undefined || parts.worker === undefined) continue;
    const arn = `${ARN_PREFIX}${String(scene.evaluate({ Ref: parts.worker }))}`;
    const role = scene.roleOf(parts.provider);
    if (role !== undefined && !scene.granted(role, 'lambda:InvokeFunction', arn)) {
      problems.push(`${role} does not grant lambda:InvokeFunction on ${parts.worker} (${arn}), which ${parts.provider} invokes for every Create and Update of ${parts.id}`);
    }
  }
  return problems;
}

/** Every trigger of a group comes after the group's topics resource: its first poll finds its topic. */
function triggersAfterTopics(scene: Scene): string[] {
  const problems: string[] = [];
  const byGroup = new Map(topicsResources(scene).map((parts) => [parts.group, parts.id]));
  for (const fn of groupFunctions(scene)) {
    const topics = byGroup.get(String(scene.environment(fn)['KAFKA_LANES_GROUP']));
    if (topics === undefined) continue;
    for (const trigger of scene.triggersOf(fn).filter((id) => !scene.closure(id).has(topics))) {
      problems.push(`${trigger} does not depend on ${topics}: CloudFormation may create the trigger before its topic exists, and its first poll finds none`);
    }
  }
  return problems;
}

/** Reach: a function with a private target is in a VPC; from there it reaches the AWS APIs it calls. */
function reach(scene: Scene): string[] {
  const problems: string[] = [];
  const privateHost = /(^|[/@,])(10\.|192\.168\.|172\.(1[6-9]|2[0-9]|3[01])\.|[^,/:@]+\.cache\.amazonaws\.com|[^,/:@]+\.kafka\.[a-z0-9-]+\.amazonaws\.com)/;
  const workers = new Map(topicsResources(scene).flatMap((parts) => (parts.worker === undefined ? [] : [[parts.worker, parts.id] as const])));
  for (const fn of scene.ofType('AWS::Lambda::Function')) {
    const reasons: string[] = [];
    for (const [name, value] of Object.entries(scene.environment(fn))) {
      const text = JSON.stringify(value);
      const stack = [...text.matchAll(/"(?:Ref|Fn::GetAtt)":\s*\[?"([A-Za-z0-9]+)"/g), ...text.matchAll(/\$\{([A-Za-z0-9]+)\./g)].map((match) => match[1]!);
      const privateResource = stack.find((ref) => /^AWS::(ElastiCache|MSK)::|^Custom::KafkaLanesTopics$/.test(scene.resources[ref]?.Type ?? ''));
      if (privateResource !== undefined) reasons.push(`${name} names ${privateResource}`);
      else if (typeof value === 'string' && privateHost.test(value)) reasons.push(`${name} names a private address (${value})`);
    }
    const mskTrigger = scene.triggersOf(fn).find((trigger) => String(scene.evaluate(scene.properties(trigger)['EventSourceArn'])).includes(':kafka:'));
    if (mskTrigger !== undefined && Object.keys(scene.environment(fn)).some((name) => name.startsWith('KAFKA_LANES_'))) reasons.push(`its producers write to the cluster of ${mskTrigger}`);
    // The worker gets its brokers with each request: the cluster its resource names is its private target.
    const resource = workers.get(fn);
    if (resource !== undefined) {
      const { Cluster: cluster, Brokers: brokers } = scene.properties(resource);
      if (cluster !== undefined) reasons.push(`it creates ${resource}'s topics on the MSK cluster ${String(scene.evaluate(cluster))} (private addresses only)`);
      else if (typeof brokers === 'string' && privateHost.test(brokers)) reasons.push(`it creates ${resource}'s topics on private brokers (${brokers})`);
    }
    if (reasons.length > 0 && !scene.inVpc(fn)) problems.push(`${fn} reaches private addresses (${reasons.join('; ')}) but is in no VPC`);
    if (scene.inVpc(fn)) {
      for (const call of scene.apisOf(fn)) {
        const found = scene.reachOf(fn, call.service, call.what);
        if (typeof found === 'string') problems.push(found);
      }
    }
  }
  // The MSK trigger's pollers, in the stack's cluster's VPC: Lambda and STS (Lambda developer guide, "Amazon MSK network configuration").
  for (const trigger of scene.ofType('AWS::Lambda::EventSourceMapping')) {
    const source = (scene.properties(trigger)['EventSourceArn'] as { Ref?: unknown } | undefined)?.Ref;
    if (typeof source !== 'string' || !(scene.resources[source]?.Type ?? '').startsWith('AWS::MSK::')) continue;
    for (const service of ['lambda', 'sts']) {
      if (scene.endpointOf(service) === undefined && !scene.declaresReach(service)) problems.push(`${trigger}'s pollers in ${source}'s VPC reach no ${service} endpoint and no declared route to it`);
    }
  }
  return problems;
}

/** The port a group's clients use on its cluster, by their auth. */
function kafkaPort(environment: Record<string, unknown>): number {
  if (environment['KAFKA_LANES_SASL_MECHANISM'] === 'aws-iam') return 9098;
  if (environment['KAFKA_LANES_SASL_MECHANISM'] !== undefined || environment['KAFKA_LANES_SASL_SECRET'] !== undefined) return 9096;
  return environment['KAFKA_LANES_KAFKA_SSL'] === 'false' ? 9092 : 9094;
}

/**
 * The stack's cluster and Redis admit the security groups of the functions that reach them, on their ports: an ingress
 * of one of their groups (inline, or an `AWS::EC2::SecurityGroupIngress` of it) from the function's group. Groups of an
 * existing VPC are not in the template: the user's precondition (docs/deploy.md, "Your own service").
 */
function securityGroupsAdmit(scene: Scene): string[] {
  const problems: string[] = [];
  const admits = (group: string, source: string, port: number): boolean => {
    const inline = ((scene.evaluate(scene.properties(group.slice(1, -1))['SecurityGroupIngress']) ?? []) as Array<Record<string, unknown>>).map((rule): Record<string, unknown> => ({ ...rule, GroupId: group }));
    const separate = scene.ofType('AWS::EC2::SecurityGroupIngress').map((id) => scene.evaluate(scene.properties(id)) as Record<string, unknown>);
    return [...inline, ...separate].some(
      (rule) =>
        rule['GroupId'] === group &&
        rule['SourceSecurityGroupId'] === source &&
        (rule['IpProtocol'] === '-1' || (rule['IpProtocol'] === 'tcp' && Number(rule['FromPort']) <= port && port <= Number(rule['ToPort']))),
    );
  };
  const templateGroups = (value: unknown): string[] =>
    ((scene.evaluate(value) ?? []) as unknown[]).map(String).filter((group) => /^<[A-Za-z0-9]+>$/.test(group) && scene.resources[group.slice(1, -1)]?.Type === 'AWS::EC2::SecurityGroup');
  const targets: Array<{ id: string; groups: string[]; port: (fn: string) => number; reaches: (fn: string) => boolean }> = [];
  for (const id of [...scene.ofType('AWS::MSK::ServerlessCluster'), ...scene.ofType('AWS::MSK::Cluster')]) {
    const properties = scene.properties(id);
    const groups = [
      ...((properties['VpcConfigs'] as Array<{ SecurityGroups?: unknown }> | undefined) ?? []).flatMap((config) => templateGroups(config.SecurityGroups)),
      ...templateGroups((properties['BrokerNodeGroupInfo'] as { SecurityGroups?: unknown } | undefined)?.SecurityGroups),
    ];
    targets.push({ id, groups, port: (fn) => kafkaPort(scene.environment(fn)), reaches: (fn) => scene.environment(fn)['KAFKA_LANES_GROUP'] !== undefined });
  }
  for (const id of scene.ofType('AWS::ElastiCache::ReplicationGroup')) {
    const port = Number(scene.evaluate(scene.properties(id)['Port']) ?? 6379);
    const named = new RegExp(`"${id}"|\\$\\{${id}\\.`);
    targets.push({ id, groups: templateGroups(scene.properties(id)['SecurityGroupIds']), port: () => port, reaches: (fn) => named.test(JSON.stringify(scene.environment(fn))) });
  }
  for (const target of targets.filter((t) => t.groups.length > 0)) {
    for (const fn of scene.ofType('AWS::Lambda::Function').filter((f) => scene.inVpc(f) && target.reaches(f))) {
      const port = target.port(fn);
      for (const source of templateGroups((scene.properties(fn)['VpcConfig'] as { SecurityGroupIds?: unknown } | undefined)?.SecurityGroupIds)) {
        if (!target.groups.some((group) => admits(group, source, port))) {
          problems.push(`${target.id}'s security groups (${target.groups.join(', ')}) admit no connection from ${source} on port ${port}: ${fn}, in that group, cannot reach ${target.id}`);
        }
      }
    }
  }
  return problems;
}

/**
 * On create, a trigger comes after the stack's endpoints its pollers use (Lambda, STS), and a function in a VPC after
 * the stack's endpoints of the APIs it calls: otherwise its first poll or its first cold start may come first and fail.
 */
function createAfterEndpoints(scene: Scene): string[] {
  const problems: string[] = [];
  for (const trigger of scene.ofType('AWS::Lambda::EventSourceMapping')) {
    for (const service of ['lambda', 'sts']) {
      const endpoint = scene.endpointOf(service);
      if (endpoint !== undefined && !scene.closure(trigger).has(endpoint)) {
        problems.push(`${trigger} does not depend on ${endpoint}: on create, its pollers may start before the ${service} endpoint they use exists`);
      }
    }
  }
  for (const fn of scene.ofType('AWS::Lambda::Function').filter((f) => scene.inVpc(f))) {
    for (const call of scene.apisOf(fn)) {
      const endpoint = scene.endpointOf(call.service);
      if (endpoint !== undefined && !scene.closure(fn).has(endpoint)) {
        problems.push(`${fn} does not depend on ${endpoint}: on create, its first invocation may read ${call.what} before the ${call.service} endpoint exists`);
      }
    }
  }
  return problems;
}

/** Grants: with MSK IAM, every topic read or written is granted; the code sends only to declared outputs. */
function grants(scene: Scene): string[] {
  const problems: string[] = [];
  const functions = scene.ofType('AWS::Lambda::Function');
  for (const fn of functions) {
    const env = scene.environment(fn);
    const topic = env['KAFKA_LANES_PRODUCE_TOPIC'];
    if (topic === undefined || env['KAFKA_LANES_SASL_MECHANISM'] !== 'aws-iam') continue;
    // The produce function writes the source topic of its group's trigger.
    const role = scene.roleOf(fn);
    const written = scene.statementsOf(role).some((statement) => statement.Action.includes('kafka-cluster:WriteData') && JSON.stringify(scene.evaluate(statement.Resource)).includes(`/${String(topic)}"`));
    if (!written) problems.push(`${role ?? fn} does not grant WriteData on \`${String(topic)}\`, which ${fn} writes`);
  }
  for (const fn of functions) {
    const env = scene.environment(fn);
    const triggers = scene.triggersOf(fn);
    if (triggers.length === 0 || env['KAFKA_LANES_GROUP'] === undefined) continue;
    const group = String(env['KAFKA_LANES_GROUP']);
    const outputs = String(env['KAFKA_LANES_OUTPUTS'] ?? '').split(',').filter((t) => t !== '');
    // What the handler's code sends, in every function that runs it (the handler and its retry function).
    const handler = scene.properties(fn)['Handler'];
    const sends = Object.entries(scene.options.sends ?? {}).find(([id]) => id === fn || scene.properties(id)['Handler'] === handler)?.[1] ?? [];
    for (const t of sends.filter((send) => !outputs.includes(send))) {
      problems.push(`${fn}'s code sends to \`${t}\`, not a declared output (kafkaLanes.outputs: ${outputs.join(', ') || 'none'}): MSK IAM would refuse the write`);
    }
    if (env['KAFKA_LANES_SASL_MECHANISM'] !== 'aws-iam') continue;
    const role = scene.roleOf(fn);
    for (const trigger of triggers) {
      const cluster = String(scene.evaluate(scene.properties(trigger)['EventSourceArn']));
      const topicArn = (name: string): string => cluster.replace(':cluster/', ':topic/') + `/${name}`;
      const iamTrigger = JSON.stringify(scene.properties(trigger)['SourceAccessConfigurations'] ?? []).includes('SASL_SCRAM') === false;
      for (const name of (scene.properties(trigger)['Topics'] as string[]) ?? []) {
        if (iamTrigger && !scene.granted(role, 'kafka-cluster:ReadData', topicArn(name))) problems.push(`${role ?? fn} does not grant ReadData on \`${name}\`, which ${trigger} reads`);
      }
      const tiers = String(env['KAFKA_LANES_RETRY_TIERS'] ?? '').split(',').filter((tier) => tier !== '');
      for (const name of [...tiers.map((tier) => `${group}.retry.${tier}`), `${group}.dlq`, ...outputs, ...sends]) {
        if (!scene.granted(role, 'kafka-cluster:WriteData', topicArn(name))) problems.push(`${role ?? fn} does not grant WriteData on \`${name}\`, which ${fn} writes`);
      }
    }
  }
  // The topics worker, with MSK IAM, may describe and create every topic of its resource.
  for (const parts of topicsResources(scene)) {
    const properties = scene.properties(parts.id);
    if (parts.worker === undefined || properties['Cluster'] === undefined || scene.environment(parts.worker)['KAFKA_LANES_SASL_MECHANISM'] !== 'aws-iam') continue;
    const cluster = String(scene.evaluate(properties['Cluster']));
    const role = scene.roleOf(parts.worker);
    const created = [
      ...((properties['Tiers'] as string[] | undefined) ?? []).map((tier) => `${parts.group}.retry.${tier}`),
      `${parts.group}.dlq`,
      ...((properties['Outputs'] as string[] | undefined) ?? []),
      ...(properties['SourcePartitions'] === undefined ? [] : [String(properties['Source'])]),
    ];
    for (const name of created) {
      for (const action of ['kafka-cluster:DescribeTopic', 'kafka-cluster:CreateTopic']) {
        if (!scene.granted(role, action, `${cluster.replace(':cluster/', ':topic/')}/${name}`)) problems.push(`${role ?? parts.worker} does not grant ${action} on \`${name}\`, which ${parts.worker} creates for ${parts.id}`);
      }
    }
  }
  return problems;
}

/**
 * The retry function: each retry tier's trigger invokes a durable function (its `DurableConfig` at most the 15 minutes
 * an event source mapping waits for an execution) through a qualified ARN (Lambda refuses an unqualified one for a
 * durable function), with the execution timeout in its environment, and its role may checkpoint its own executions;
 * every tier of a group has a trigger, and the handler reads no tier.
 */
function retryFunctions(scene: Scene): string[] {
  const problems: string[] = [];
  for (const fn of groupFunctions(scene)) {
    const env = scene.environment(fn);
    const group = String(env['KAFKA_LANES_GROUP']);
    const triggers = scene.triggersOf(fn);
    const topicsOf = (trigger: string): string[] => (scene.properties(trigger)['Topics'] as string[] | undefined) ?? [];
    const retryTriggers = triggers.filter((trigger) => topicsOf(trigger).some((topic) => topic.startsWith(`${group}.retry.`)));
    if (retryTriggers.length === 0) continue;
    if (retryTriggers.length < triggers.length) problems.push(`${fn} has both a source trigger and retry tiers' triggers (${retryTriggers.join(', ')}): the tiers' copies would wait in running invocations`);
    const durable = scene.properties(fn)['DurableConfig'] as { ExecutionTimeout?: unknown } | undefined;
    if (durable === undefined) {
      problems.push(`${fn} is invoked by the retry tiers' triggers (${retryTriggers.join(', ')}) but has no DurableConfig: a copy not yet due would wait in a running invocation, billed`);
      continue;
    }
    const timeout = Number(scene.evaluate(durable.ExecutionTimeout));
    if (!(timeout >= 1 && timeout <= ESM_DURABLE_SECONDS)) problems.push(`${fn}'s DurableConfig.ExecutionTimeout is ${String(durable.ExecutionTimeout)}: an event source mapping waits for a durable execution ${ESM_DURABLE_SECONDS} seconds at most`);
    if (env['KAFKA_LANES_RETRY_EXECUTION_TIMEOUT'] !== String(durable.ExecutionTimeout)) {
      problems.push(`${fn}'s KAFKA_LANES_RETRY_EXECUTION_TIMEOUT (${String(env['KAFKA_LANES_RETRY_EXECUTION_TIMEOUT'])}) is not its DurableConfig.ExecutionTimeout (${String(durable.ExecutionTimeout)}): it would wait longer than its execution may`);
    }
    for (const trigger of retryTriggers) {
      const target = String(scene.evaluate(scene.properties(trigger)['FunctionName']));
      const alias = /^<([A-Za-z0-9]+)>$/.exec(target)?.[1];
      const qualified = /^<[A-Za-z0-9]+\.Arn>:[A-Za-z0-9_-]+$/.test(target) || ['AWS::Lambda::Alias', 'AWS::Lambda::Version'].includes(scene.resources[alias ?? '']?.Type ?? '');
      if (!qualified) problems.push(`${trigger} invokes ${fn} by an unqualified ARN (${target}): Lambda refuses to invoke a durable function but by a version or alias`);
    }
    const name = String(scene.evaluate({ Ref: fn }));
    const execution = `${ARN_PREFIX}${name}:7/durable-execution/e/0`;
    for (const action of DURABLE_ACTIONS) {
      if (!scene.granted(scene.roleOf(fn), action, execution)) problems.push(`${scene.roleOf(fn) ?? fn} does not grant ${action} on ${fn}'s durable executions (${execution}): its checkpoints are refused`);
    }
  }
  for (const fn of groupFunctions(scene)) {
    const env = scene.environment(fn);
    const group = String(env['KAFKA_LANES_GROUP']);
    const sourceTrigger = scene.triggersOf(fn).some((trigger) => ((scene.properties(trigger)['Topics'] as string[] | undefined) ?? []).every((topic) => !topic.startsWith(`${group}.`)));
    if (!sourceTrigger) continue;
    const read = new Set(scene.ofType('AWS::Lambda::EventSourceMapping').flatMap((trigger) => (scene.properties(trigger)['Topics'] as string[] | undefined) ?? []));
    for (const tier of String(env['KAFKA_LANES_RETRY_TIERS'] ?? '').split(',').filter((t) => t !== '')) {
      if (!read.has(`${group}.retry.${tier}`)) problems.push(`no trigger reads \`${group}.retry.${tier}\`, which ${fn} writes: its copies would wait there forever`);
    }
  }
  return problems;
}

/** The checks, in the order their problems are listed. */
export const REHEARSAL_CHECKS: ReadonlyArray<(scene: Scene) => string[]> = [
  providersOutsideVpc,
  providersInvokeWorkers,
  triggersAfterTopics,
  reach,
  securityGroupsAdmit,
  createAfterEndpoints,
  grants,
  retryFunctions,
];
