import { ENV } from '../options/constants';
import { completionGroupId, deadLetterTopic, recoveryGroupPrefix, retryTopic, retryTopicPrefix } from '../options/names';
import { parseSecretRef } from '../options/secret-ref';
import type { FunctionPlan, Statement, TriggerSettings } from './types';
import { glueRegistryGrants, schemaRegistrySecrets } from './schema-registry';

/** The statements of the roles of a group's functions. */
export interface GroupGrants {
  /** The handler: its source trigger's reads, the hand-off producer's writes, the declared outputs. */
  readonly handler: Statement[];
  /** The retry function: the retry tiers' triggers' reads, the hand-off writes, the outputs, its durable executions. */
  readonly retry: Statement[];
  readonly committer: Statement[];
  /** The topics resource's worker: creates and checks the group's topics at deploy time (topics-handler.ts). */
  readonly topics: Statement[];
  /** The topics resource's provider: asks MSK for the brokers, invokes the worker, reads its stack's status. */
  readonly topicsProvider: Statement[];
  /** The produce function (`kafkaLanes.produce`): writes the source topic, reads the trigger's committed offsets. */
  readonly producer: Statement[];
}

/** A CloudFormation value: a string when the cluster ARN is known, else built from the ARN at deploy time. */
type Value = string | Record<string, unknown>;

/**
 * MSK resource ARNs derived from a cluster ARN `arn:<partition>:kafka:<region>:<account>:cluster/<name>/<uuid>`:
 * its topics are `...:topic/<name>/<uuid>/<topic>` and its groups `...:group/<name>/<uuid>/<group>` (MSK IAM
 * access control's resource types). A cluster ARN known only at deploy time (`Ref`, `Fn::ImportValue`) is cut
 * by CloudFormation (`Fn::Split` on `:cluster/`), so even then no grant falls back to `"*"`.
 */
export function mskArns(cluster: unknown): { cluster: Value; topic(name: string): Value; group(name: string): Value } {
  if (typeof cluster === 'string') {
    const match = /^(arn:[^:]+:kafka:[^:]*:[^:]*:)cluster\/(.+)$/.exec(cluster);
    const [prefix, rest] = match === null ? [undefined, undefined] : [match[1], match[2]];
    if (prefix !== undefined && rest !== undefined) {
      return { cluster, topic: (name) => `${prefix}topic/${rest}/${name}`, group: (name) => `${prefix}group/${rest}/${name}` };
    }
  }
  // On `:cluster/`, not `cluster/`: a cluster named `orders-cluster` has `cluster/` in its name too.
  const part = (index: number): Record<string, unknown> => ({ 'Fn::Select': [index, { 'Fn::Split': [':cluster/', cluster] }] });
  const arn = (kind: string, name: string): Value => ({ 'Fn::Join': ['', [part(0), `:${kind}/`, part(1), `/${name}`]] });
  return { cluster: cluster as Value, topic: (name) => arn('topic', name), group: (name) => arn('group', name) };
}

// A function in a VPC: what AWS's managed policy AWSLambdaVPCAccessExecutionRole grants (AWS managed policy reference,
// version 3 of January 2024, which added `ec2:DescribeSubnets`), less the logs (each role writes its own log group).
const ENI_ACTIONS = ['ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets', 'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'];
// What an event source mapping in a VPC needs besides (Lambda developer guide, MSK and self-managed Kafka
// "execution role permissions"). EC2 has no resource-level permissions for these: `"*"` is the only form.
const TRIGGER_NETWORK_ACTIONS = ['ec2:DescribeVpcs', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups'];
/** A function in a VPC whose trigger is in a VPC too: both lists, each action once (`DescribeSubnets` is in both). */
const TRIGGER_ENI_ACTIONS = [...new Set([...ENI_ACTIONS, ...TRIGGER_NETWORK_ACTIONS])];
/**
 * What a durable function's role needs for its checkpoints (Lambda developer guide, "Security and permissions for Lambda
 * durable functions"; the same two actions as the managed policy AWSLambdaBasicDurableExecutionRolePolicy, which grants
 * them on `"*"`).
 */
const DURABLE_ACTIONS = ['lambda:CheckpointDurableExecution', 'lambda:GetDurableExecutionState'];
const SECRET_KEYS = ['saslScram512Auth', 'saslScram256Auth', 'saslPlainAuth', 'clientCertificateTlsAuth', 'serverRootCaCertificate'];

/**
 * Least-privilege grants of one group, per function (`compact`: the retry tiers under one wildcard, see below). The
 * handler role: its trigger's reads (the source topic in the consumer group `<group>`, with the cluster's connect and
 * dynamic-configuration reads MSK IAM asks of a consumer) and the hand-off producer's writes (`<group>.retry.*` and
 * `<group>.dlq`, idempotently). The retry function's role: the retry tiers' triggers' reads (`<group>.retry.<tier>` in
 * groups of the same names), the same writes, and its durable executions' checkpoints. The committer role: offset
 * commits to `<group>.lanes` for the source and retry topics, and the re-drive's writes. MSK IAM grants only when the
 * clients use IAM.
 *
 * @example
 * groupGrants(plan).committer; // [{ Action: ['kafka-cluster:Connect', ...], Resource: 'arn:aws:kafka:...:cluster/shop/abcd-1' }, ...]
 */
export function groupGrants(plan: FunctionPlan, inVpc: boolean, compact = false): GroupGrants {
  const grants: GroupGrants = { handler: [], retry: [], committer: [], topics: [], topicsProvider: [], producer: [] };
  const names = grantNames(plan, compact);
  if (names.trigger.kind === 'msk') mskTriggerGrants(plan, grants, names);
  else {
    const access = (names.trigger.settings['accessConfigurations'] ?? {}) as Record<string, unknown>;
    const secrets = SECRET_KEYS.flatMap((key) => (Array.isArray(access[key]) ? (access[key] as unknown[]) : []));
    if (secrets.length > 0) both(grants, ...secretReads(secrets));
    if (access['vpcSubnet'] !== undefined) both(grants, { Effect: 'Allow', Action: TRIGGER_ENI_ACTIONS, Resource: '*' });
  }
  if (names.trigger.kind === 'msk') both(grants, { Effect: 'Allow', Action: TRIGGER_ENI_ACTIONS, Resource: '*' });
  else if (inVpc) both(grants, { Effect: 'Allow', Action: ENI_ACTIONS, Resource: '*' });
  if (inVpc) grants.committer.push({ Effect: 'Allow', Action: ENI_ACTIONS, Resource: '*' });
  if (inVpc) grants.topics.push({ Effect: 'Allow', Action: ENI_ACTIONS, Resource: '*' });
  if (inVpc && plan.producer !== undefined) grants.producer.push({ Effect: 'Allow', Action: ENI_ACTIONS, Resource: '*' });
  functionGrants(plan, grants);
  return { handler: dedupe(grants.handler), retry: dedupe(grants.retry), committer: dedupe(grants.committer), topics: dedupe(grants.topics), topicsProvider: dedupe(grants.topicsProvider), producer: dedupe(grants.producer) };
}

/** The topics and consumer groups a group's grants name. */
interface GrantNames {
  readonly trigger: { kind: 'msk'; settings: TriggerSettings } | { kind: 'kafka'; settings: TriggerSettings };
  readonly retryTopics: readonly string[];
  /** The hand-off producer's writes: the retry topics and the dead-letter topic. */
  readonly writes: readonly string[];
}

function grantNames(plan: FunctionPlan, compact: boolean): GrantNames {
  const trigger = 'msk' in plan.source ? { kind: 'msk' as const, settings: plan.source.msk } : { kind: 'kafka' as const, settings: plan.source.kafka };
  // Compact: the retry tiers' topics and consumer groups as one ARN wildcard each, `<group>.retry.*` (MSK IAM
  // resource ARNs take `*`), for a role whose policy would pass IAM's size quota with one ARN per tier.
  const retryTopics = compact && plan.tiers.length > 0 ? [`${retryTopicPrefix(plan.group)}*`] : plan.tiers.map((tier) => retryTopic(plan.group, tier));
  return { trigger, retryTopics, writes: [`${retryTopicPrefix(plan.group)}*`, deadLetterTopic(plan.group)] };
}

/** The code of the handler runs in both functions: the same hand-off producer, the same outputs, the same secrets. */
function both(grants: GroupGrants, ...statements: Statement[]): void {
  grants.handler.push(...statements);
  grants.retry.push(...statements);
}

/** An MSK trigger's grants: the cluster's description, the triggers' reads, the clients' MSK IAM grants, a SCRAM secret. */
function mskTriggerGrants(plan: FunctionPlan, grants: GroupGrants, names: GrantNames): void {
  const { trigger: { settings }, retryTopics } = names;
  const arns = mskArns(settings.arn);
  // The triggers' (Lambda's MSK execution role permissions); the committer calls no MSK API: its brokers come from
  // the topics resource, at deploy time (topics-resource.ts).
  both(grants, { Effect: 'Allow', Action: ['kafka:DescribeCluster', 'kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'], Resource: arns.cluster });
  const scram = settings['saslScram512'];
  // A trigger authenticates with its function's role unless it has a SCRAM secret: the source's with the handler's
  // role, each retry tier's with the retry function's.
  if (scram === undefined) {
    const reads = (topics: readonly string[]): Statement[] =>
      kafkaCluster(arns, { cluster: ['Connect', 'DescribeClusterDynamicConfiguration'], topics, topicActions: ['DescribeTopic', 'ReadData'], groups: topics === retryTopics ? retryTopics : [plan.group] });
    grants.handler.push(...reads([settings.topic]));
    grants.retry.push(...reads(retryTopics));
  }
  if (plan.auth === 'iam') mskIamGrants(plan, grants, names, arns);
  // The topics resource's provider asks MSK for the brokers, at deploy time, when only the cluster's ARN is known.
  if (plan.topics.properties['Cluster'] !== undefined) grants.topicsProvider.push({ Effect: 'Allow', Action: ['kafka:GetBootstrapBrokers'], Resource: arns.cluster });
  if (scram !== undefined) both(grants, ...secretReads([scram]));
}

/** The grants of the group's Kafka clients on MSK IAM: the hand-off and outputs' writes, the committer, the topics resource, the produce function. */
function mskIamGrants(plan: FunctionPlan, grants: GroupGrants, { trigger, retryTopics, writes }: GrantNames, arns: ReturnType<typeof mskArns>): void {
  const { group, outputs } = plan;
  const source = trigger.settings.topic;
  both(grants, ...kafkaCluster(arns, { cluster: ['Connect', 'WriteDataIdempotently', 'DescribeClusterDynamicConfiguration'], topics: writes, topicActions: ['DescribeTopic', 'WriteData'] }));
  // The handler's `ctx.send` outputs, only to the declared topics.
  if (outputs.length > 0) both(grants, { Effect: 'Allow', Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], Resource: outputs.map(arns.topic) });
  grants.committer.push(
    // The re-drive's producer: no cluster configuration read (DescribeClusterDynamicConfiguration is the trigger's).
    ...kafkaCluster(arns, { cluster: ['Connect', 'WriteDataIdempotently'], topics: writes, topicActions: ['DescribeTopic', 'WriteData'] }),
    // The completion group, and the recoveries' reads of a partition again (read-range.ts), each in a group of
    // its own under `<group>.lanes.recover.`: concurrent recoveries never share a group, so never rebalance one another.
    ...kafkaCluster(arns, { cluster: [], topics: [source, ...retryTopics], topicActions: ['DescribeTopic', 'ReadData'], groups: [completionGroupId(group), `${recoveryGroupPrefix(group)}*`] }),
    // What the triggers committed in their groups: a frontier below it is a loss of done bits (docs/durability.md).
    { Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup'], Resource: [group, ...retryTopics].map(arns.group) },
  );
  // The topics resource: lists, describes (partitions, configs), creates and, for a declared source, grows the
  // group's topics; deletes the retry and dead-letter topics only when `topics.deleteOnRemove` asks it.
  const owned = [...writes, ...outputs];
  grants.topics.push(
    { Effect: 'Allow', Action: ['kafka-cluster:Connect'], Resource: arns.cluster },
    { Effect: 'Allow', Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:DescribeTopicDynamicConfiguration', 'kafka-cluster:CreateTopic'], Resource: [source, ...owned].map(arns.topic) },
  );
  if (plan.topics.properties['SourcePartitions'] !== undefined) grants.topics.push({ Effect: 'Allow', Action: ['kafka-cluster:AlterTopic'], Resource: arns.topic(source) });
  // An update that drops a retry tier first reads how far its trigger got (topics-handler.ts): group offsets.
  grants.topics.push({ Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup'], Resource: arns.group(`${retryTopicPrefix(group)}*`) });
  if (plan.topics.properties['DeleteOnRemove'] === 'true') grants.topics.push({ Effect: 'Allow', Action: ['kafka-cluster:DeleteTopic'], Resource: writes.map(arns.topic) });
  // The produce function: the source topic only, and the trigger's committed offsets (OffsetFetch: DescribeGroup).
  if (plan.producer !== undefined) {
    grants.producer.push(
      ...kafkaCluster(arns, { cluster: ['Connect', 'WriteDataIdempotently'], topics: [source], topicActions: ['DescribeTopic', 'WriteData'] }),
      { Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup'], Resource: arns.group(group) },
    );
  }
}

/** What each function reads or calls whatever the cluster: the schema registry, the secrets, checkpoints, the worker. */
function functionGrants(plan: FunctionPlan, grants: GroupGrants): void {
  // The source trigger's schema registry (schema-registry.ts): a Glue registry's reads, or a Confluent registry's secrets.
  grants.handler.push(...glueRegistryGrants(plan.schemaRegistry));
  const registrySecrets = schemaRegistrySecrets(plan.schemaRegistry);
  if (registrySecrets.length > 0) grants.handler.push(...secretReads(registrySecrets));
  const secrets = secretGrants(plan.environment);
  both(grants, ...secrets);
  grants.committer.push(...secrets);
  // Its durable executions' checkpoints: Lambda authorizes them against the execution's ARN, which extends the
  // function's qualified ARN (`...:function:<name>:<version>/durable-execution/...`), so `:*` of this function only.
  grants.retry.push({ Effect: 'Allow', Action: DURABLE_ACTIONS, Resource: { 'Fn::Sub': `arn:\${AWS::Partition}:lambda:\${AWS::Region}:\${AWS::AccountId}:function:${plan.retry.name}:*` } });
  // The topics worker needs the Kafka credentials only: not the Redis AUTH token.
  grants.topics.push(...secretGrants({ ...plan.environment, [ENV.redisAuthSecret]: undefined }));
  if (plan.producer !== undefined) grants.producer.push(...secretGrants({ ...plan.environment, [ENV.redisAuthSecret]: undefined }));
  // The provider invokes its worker (by name: the worker's ARN), and reads its own stack's status to tell a rollback.
  grants.topicsProvider.push(
    { Effect: 'Allow', Action: ['lambda:InvokeFunction'], Resource: { 'Fn::Sub': `arn:\${AWS::Partition}:lambda:\${AWS::Region}:\${AWS::AccountId}:function:${String(plan.topics.definition.name)}` } },
    { Effect: 'Allow', Action: ['cloudformation:DescribeStacks'], Resource: { Ref: 'AWS::StackId' } },
  );
}

function kafkaCluster(
  arns: ReturnType<typeof mskArns>,
  grant: { cluster: string[]; topics: readonly string[]; topicActions: string[]; groups?: readonly string[] },
): Statement[] {
  const statements: Statement[] = [];
  if (grant.cluster.length > 0) statements.push({ Effect: 'Allow', Action: grant.cluster.map((action) => `kafka-cluster:${action}`), Resource: arns.cluster });
  statements.push({ Effect: 'Allow', Action: grant.topicActions.map((action) => `kafka-cluster:${action}`), Resource: grant.topics.map(arns.topic) });
  if (grant.groups !== undefined) {
    statements.push({ Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], Resource: grant.groups.map(arns.group) });
  }
  return statements;
}

/**
 * A trigger's secrets: read by the event source mapping with the function's role, decrypted through Secrets Manager
 * only, with a key of the secret's account and region (the stack's for a secret known at deploy time).
 */
export function secretReads(secrets: readonly unknown[]): Statement[] {
  const decrypts = secrets.map((secret): Statement => {
    const arn = typeof secret === 'string' ? /^arn:[^:]+:[^:]+:([^:]*):([0-9]*):/.exec(secret) : null;
    const region = arn?.[1] || '${AWS::Region}';
    const account = arn?.[2] || '${AWS::AccountId}';
    return {
      Effect: 'Allow',
      Action: ['kms:Decrypt'],
      Resource: { 'Fn::Sub': `arn:\${AWS::Partition}:kms:${region}:${account}:key/*` },
      Condition: { StringEquals: { 'kms:ViaService': subIfNeeded(`secretsmanager.${region}.amazonaws.com`) } },
    };
  });
  return [{ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [...secrets] }, ...dedupe(decrypts)];
}

/**
 * The reads of the secrets the group's functions name in their environment (the SCRAM credentials of
 * `KAFKA_LANES_SASL_SECRET`, the Redis AUTH token of `KAFKA_LANES_REDIS_AUTH_SECRET`): `secretsmanager:GetSecretValue`
 * or `ssm:GetParameter` on exactly that secret, and `kms:Decrypt` only on that service's behalf in the secret's
 * region. Both functions connect to Kafka and Redis, so both get them.
 *
 * @example
 * secretGrants({ KAFKA_LANES_REDIS_AUTH_SECRET: 'ssm:/shop/redis-token' });
 * // [{ Action: ['ssm:GetParameter'], Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/shop/redis-token' } }, { Action: ['kms:Decrypt'], ... }]
 */
export function secretGrants(environment: Readonly<Record<string, unknown>>): Statement[] {
  const statements: Statement[] = [];
  for (const variable of [ENV.saslSecret, ENV.redisAuthSecret]) {
    const reference = environment[variable];
    if (reference === undefined) continue;
    const ref = typeof reference === 'string' ? parseSecretRef(reference) : undefined;
    if (ref !== undefined && 'problem' in ref) continue;
    const store = ref?.store ?? 'secretsmanager';
    // Where the secret lives: its ARN's region and account, else the stack's (`Fn::Sub` fills them in at deploy).
    const arn = typeof reference === 'string' ? /^arn:[^:]+:[^:]+:([^:]*):([0-9]*):/.exec(reference) : null;
    const region = arn?.[1] || '${AWS::Region}';
    const account = arn?.[2] || '${AWS::AccountId}';
    let resource: unknown = reference;
    if (ref?.store === 'ssm' && !ref.name.startsWith('arn:')) resource = { 'Fn::Sub': `arn:\${AWS::Partition}:ssm:${region}:${account}:parameter/${ref.name.replace(/^\//, '')}` };
    // A secret named without its ARN: the ARN ends with `-` and six random characters (Secrets Manager's naming).
    if (ref?.store === 'secretsmanager' && !ref.id.startsWith('arn:')) resource = { 'Fn::Sub': `arn:\${AWS::Partition}:secretsmanager:${region}:${account}:secret:${ref.id}-??????` };
    statements.push(
      { Effect: 'Allow', Action: [store === 'ssm' ? 'ssm:GetParameter' : 'secretsmanager:GetSecretValue'], Resource: resource },
      // The secret's KMS key is not known here (AWS managed or the user's): any key of its account and region, and
      // only when that service decrypts on the function's behalf.
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: { 'Fn::Sub': `arn:\${AWS::Partition}:kms:${region}:${account}:key/*` },
        Condition: { StringEquals: { 'kms:ViaService': subIfNeeded(`${store}.${region}.amazonaws.com`) } },
      },
    );
  }
  return statements;
}

/** A string with `${...}` as `Fn::Sub`, else as it is (cfn-lint W1020). */
function subIfNeeded(text: string): unknown {
  return text.includes('${') ? { 'Fn::Sub': text } : text;
}

function dedupe(statements: Statement[]): Statement[] {
  const seen = new Set<string>();
  return statements.filter((statement) => {
    const key = JSON.stringify(statement);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A role for one function: assumed by Lambda, writing its own log group, with the given statements. */
export function functionRole(
  functionName: string,
  statements: readonly Statement[],
  extra: { managedPolicyArns?: unknown[]; permissionsBoundary?: unknown } = {},
): { Type: 'AWS::IAM::Role'; Properties: Record<string, unknown>; DependsOn?: string[] } {
  const logGroup = { 'Fn::Sub': `arn:\${AWS::Partition}:logs:\${AWS::Region}:\${AWS::AccountId}:log-group:/aws/lambda/${functionName}:*` };
  return {
    Type: 'AWS::IAM::Role',
    Properties: {
      AssumeRolePolicyDocument: {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Principal: { Service: ['lambda.amazonaws.com'] }, Action: ['sts:AssumeRole'] }],
      },
      Policies: [
        {
          PolicyName: 'kafka-lanes',
          PolicyDocument: {
            Version: '2012-10-17',
            Statement: mergeStatements([{ Effect: 'Allow', Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Resource: [logGroup] }, ...statements]),
          },
        },
      ],
      ...(extra.managedPolicyArns === undefined || extra.managedPolicyArns.length === 0 ? {} : { ManagedPolicyArns: extra.managedPolicyArns }),
      ...(extra.permissionsBoundary === undefined ? {} : { PermissionsBoundary: extra.permissionsBoundary }),
    },
  };
}

/**
 * Statements merged where IAM reads them the same: one statement per resource (and condition) with the union of
 * their actions, then one per action set with the union of their resources. What each grants stays the same.
 *
 * @example
 * mergeStatements([{ Effect: 'Allow', Action: ['a:X'], Resource: 'r' }, { Effect: 'Allow', Action: ['a:Y'], Resource: 'r' }]);
 * // [{ Effect: 'Allow', Action: ['a:X', 'a:Y'], Resource: 'r' }]
 */
export function mergeStatements(statements: readonly Statement[]): Statement[] {
  const byResource = new Map<string, { Effect: 'Allow'; Action: string[]; Resource: unknown; Condition?: Record<string, unknown> }>();
  for (const statement of statements) {
    const key = JSON.stringify([statement.Resource, statement.Condition ?? null]);
    const seen = byResource.get(key);
    if (seen === undefined) byResource.set(key, { ...statement, Action: [...statement.Action] });
    else for (const action of statement.Action) if (!seen.Action.includes(action)) seen.Action.push(action);
  }
  const byActions = new Map<string, { Effect: 'Allow'; Action: string[]; Resource: unknown; Condition?: Record<string, unknown> }>();
  for (const statement of byResource.values()) {
    const key = JSON.stringify([[...statement.Action].sort(), statement.Condition ?? null]);
    const seen = byActions.get(key);
    if (seen === undefined) {
      byActions.set(key, statement);
      continue;
    }
    const resources = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);
    const merged = [...resources(seen.Resource)];
    for (const resource of resources(statement.Resource)) if (!merged.some((known) => JSON.stringify(known) === JSON.stringify(resource))) merged.push(resource);
    // `"*"` covers every other resource of the same actions.
    seen.Resource = merged.includes('*') ? '*' : merged.length === 1 ? merged[0] : merged;
  }
  return [...byActions.values()];
}

/** IAM's quota on the inline policies of one role, summed, white space not counted (IAM user guide, "IAM and AWS STS quotas"). */
export const ROLE_POLICY_LIMIT = 10_240;

// The longest values CloudFormation could put in at deploy time: a policy that fits with them fits with any.
const PSEUDO_STAND_INS: Record<string, string> = {
  'AWS::Partition': 'aws-iso-b',
  'AWS::Region': 'ap-southeast-5',
  'AWS::AccountId': '123456789012',
  'AWS::StackName': 's'.repeat(128),
  'AWS::URLSuffix': 'amazonaws.com.cn',
};
/** An MSK cluster ARN with the longest name MSK accepts (64) and a cluster UUID with its suffix. */
const LONGEST_CLUSTER_ARN = `arn:aws-iso-b:kafka:ap-southeast-5:123456789012:cluster/${'c'.repeat(64)}/${'0'.repeat(36)}-25`;

function standIn(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(standIn);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [name, args] = entries[0] ?? [];
  if (entries.length !== 1 || name === undefined || !(name === 'Ref' || name.startsWith('Fn::'))) {
    return Object.fromEntries(entries.map(([key, inner]) => [key, standIn(inner)]));
  }
  switch (name) {
    case 'Fn::Sub': {
      const text = Array.isArray(args) ? String(args[0]) : String(args);
      return text.replace(/\$\{([^}]+)\}/g, (_match, variable: string) => PSEUDO_STAND_INS[variable] ?? LONGEST_CLUSTER_ARN);
    }
    case 'Fn::Join': {
      const [separator, list] = args as [string, unknown];
      const parts = standIn(list);
      return Array.isArray(parts) ? parts.map(String).join(separator) : String(parts);
    }
    case 'Fn::Split': {
      const [separator, text] = args as [string, unknown];
      return String(standIn(text)).split(separator);
    }
    case 'Fn::Select': {
      const [index, list] = args as [number, unknown];
      const items = standIn(list);
      return Array.isArray(items) ? items[Number(index)] : items;
    }
    case 'Ref':
      return PSEUDO_STAND_INS[String(args)] ?? LONGEST_CLUSTER_ARN;
    default:
      // Fn::ImportValue, Fn::GetAtt, Fn::If...: an ARN at most as long as the longest cluster's.
      return LONGEST_CLUSTER_ARN;
  }
}

/**
 * The size IAM counts for a role's inline policies, at most: values known only at deploy time are counted at the
 * longest they could be (partition, region, stack name, a cluster ARN of a 64-character name).
 */
export function rolePolicyLength(role: { Properties: Record<string, unknown> }): number {
  const policies = (role.Properties['Policies'] ?? []) as Array<{ PolicyDocument: unknown }>;
  return policies.reduce((sum, policy) => sum + JSON.stringify(standIn(policy.PolicyDocument)).replace(/\s/g, '').length, 0);
}
