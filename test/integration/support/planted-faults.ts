/**
 * Faults planted in today's packaged templates, each of which the deploy rehearsal must catch (deploy-rehearsal.test.ts):
 * the seven a review planted in the packaged example and the README's service (of which the rehearsal once caught two),
 * and what the retry function and the order after the stack's endpoints depend on. Each is written as the change it
 * makes to a fresh copy of a configuration's template, so the fixtures follow the templates as they change.
 */
import type { Template, TemplateResource } from './deploy-rehearsal';

export interface PlantedFault {
  /** What goes wrong, as a reviewer would plant it. */
  readonly fault: string;
  /** The configuration whose packaged template it is planted in (a name of deploy-rehearsal.test.ts's CONFIGURATIONS). */
  readonly configuration: string;
  readonly plant: (template: Template) => void;
  /** A problem the rehearsal must name. */
  readonly found: RegExp;
}

export const EXAMPLE = 'the example in the VPC it creates (MSK Serverless)';
export const BEHIND_NAT = 'the example in an existing VPC behind a NAT gateway';
export const CONFIGURED_BROKERS = 'an MSK service whose producers take configured brokers (no brokers from the topics resource)';

type Mutable = { -readonly [K in keyof TemplateResource]: TemplateResource[K] } & { Properties: Record<string, unknown> };
const resource = (template: Template, id: string): Mutable => {
  const found = template.Resources[id];
  if (found === undefined) throw new Error(`the packaged template has no ${id} to plant a fault in`);
  return found as Mutable;
};
type Statements = Array<{ Action: string[]; Resource: unknown }>;
/** The role's statements without `action` (a statement left with no action goes). */
function revoke(template: Template, role: string, action: string): void {
  const policy = (resource(template, role).Properties['Policies'] as Array<{ PolicyDocument: { Statement: Statements } }>)[0]!.PolicyDocument;
  const before = JSON.stringify(policy.Statement);
  policy.Statement = policy.Statement.map((s) => ({ ...s, Action: s.Action.filter((a) => a !== action) })).filter((s) => s.Action.length > 0);
  if (JSON.stringify(policy.Statement) === before) throw new Error(`${role} grants no ${action} to revoke`);
}
const retryTriggers = (template: Template): string[] => Object.keys(template.Resources).filter((id) => /EventSourceMapping.*retry/.test(id));

export const PLANTED_FAULTS: readonly PlantedFault[] = [
  {
    fault: 'the provider loses its grant to invoke the worker',
    configuration: EXAMPLE,
    plant: (template) => revoke(template, 'OrdersTopicsKafkaLanesRole', 'lambda:InvokeFunction'),
    found: /^OrdersTopicsKafkaLanesRole does not grant lambda:InvokeFunction on OrdersTopicsVpcLambdaFunction/,
  },
  {
    // Where the functions take their brokers from the topics resource (`Fn::GetAtt`), a trigger follows the resource
    // through its function anyway; with brokers configured only the `DependsOn` orders them.
    fault: 'the triggers lose their DependsOn on the topics resource',
    configuration: CONFIGURED_BROKERS,
    plant: (template) => {
      for (const [, r] of Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::EventSourceMapping')) {
        const mapping = r as Mutable;
        mapping.DependsOn = ([] as string[]).concat(mapping.DependsOn ?? []).filter((id) => id !== 'OrdersKafkaLanesTopics');
      }
    },
    found: /^OrdersEventSourceMapping\w+ does not depend on OrdersKafkaLanesTopics: CloudFormation may create the trigger before its topic exists/,
  },
  {
    fault: 'the worker loses its VPC',
    configuration: EXAMPLE,
    plant: (template) => delete resource(template, 'OrdersTopicsVpcLambdaFunction').Properties['VpcConfig'],
    found: /^OrdersTopicsVpcLambdaFunction reaches private addresses \(it creates OrdersKafkaLanesTopics's topics on the MSK cluster .*\) but is in no VPC/,
  },
  {
    fault: 'the worker loses CreateTopic',
    configuration: EXAMPLE,
    plant: (template) => revoke(template, 'OrdersTopicsVpcKafkaLanesRole', 'kafka-cluster:CreateTopic'),
    found: /^OrdersTopicsVpcKafkaLanesRole does not grant kafka-cluster:CreateTopic on `orders-svc-prod\.retry\.1s`/,
  },
  {
    fault: "the cluster's security group loses its ingress from the functions' group",
    configuration: EXAMPLE,
    plant: (template) => delete resource(template, 'KafkaLanesKafkaSecurityGroup').Properties['SecurityGroupIngress'],
    found: /^KafkaLanesMsk's security groups \(<KafkaLanesKafkaSecurityGroup>\) admit no connection from <KafkaLanesFunctionSecurityGroup> on port 9098/,
  },
  {
    fault: 'the provider placed in the VPC',
    configuration: EXAMPLE,
    plant: (template) => {
      resource(template, 'OrdersTopicsLambdaFunction').Properties['VpcConfig'] = resource(template, 'OrdersTopicsVpcLambdaFunction').Properties['VpcConfig'];
    },
    found: /^OrdersTopicsLambdaFunction \(the provider of OrdersKafkaLanesTopics\) is in a VPC/,
  },
  {
    // A NAT gateway reaches S3 and MSK's API, so the answer path is there: until the stack deletes a route or the
    // gateway is lost, which a provider outside any VPC never depends on.
    fault: 'the provider placed in the VPC, behind a NAT gateway',
    configuration: BEHIND_NAT,
    plant: (template) => {
      resource(template, 'OrdersTopicsLambdaFunction').Properties['VpcConfig'] = resource(template, 'OrdersTopicsVpcLambdaFunction').Properties['VpcConfig'];
    },
    found: /^OrdersTopicsLambdaFunction \(the provider of OrdersKafkaLanesTopics\) is in a VPC/,
  },
  {
    fault: 'the retry function loses its DurableConfig',
    configuration: EXAMPLE,
    plant: (template) => delete resource(template, 'OrdersRetryLambdaFunction').Properties['DurableConfig'],
    found: /^OrdersRetryLambdaFunction is invoked by the retry tiers' triggers \(.*\) but has no DurableConfig/,
  },
  {
    fault: "a retry tier's trigger invokes the retry function by its unqualified ARN",
    configuration: EXAMPLE,
    plant: (template) => {
      resource(template, retryTriggers(template)[0]!).Properties['FunctionName'] = { 'Fn::GetAtt': ['OrdersRetryLambdaFunction', 'Arn'] };
    },
    found: /^OrdersEventSourceMapping\w+retry1s invokes OrdersRetryLambdaFunction by an unqualified ARN/,
  },
  {
    fault: "the retry tiers' triggers back on the handler",
    configuration: EXAMPLE,
    plant: (template) => {
      for (const id of retryTriggers(template)) resource(template, id).Properties['FunctionName'] = { 'Fn::GetAtt': ['OrdersLambdaFunction', 'Arn'] };
    },
    found: /^OrdersLambdaFunction has both a source trigger and retry tiers' triggers/,
  },
  {
    fault: "the retry function's role loses its durable executions' checkpoints",
    configuration: EXAMPLE,
    plant: (template) => revoke(template, 'OrdersRetryKafkaLanesRole', 'lambda:CheckpointDurableExecution'),
    found: /^OrdersRetryKafkaLanesRole does not grant lambda:CheckpointDurableExecution on OrdersRetryLambdaFunction's durable executions/,
  },
  {
    fault: "the retry function's execution timeout in its environment no longer its DurableConfig's",
    configuration: EXAMPLE,
    plant: (template) => {
      (resource(template, 'OrdersRetryLambdaFunction').Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['KAFKA_LANES_RETRY_EXECUTION_TIMEOUT'] = '3600';
    },
    found: /^OrdersRetryLambdaFunction's KAFKA_LANES_RETRY_EXECUTION_TIMEOUT \(3600\) is not its DurableConfig\.ExecutionTimeout \(900\)/,
  },
  {
    fault: "the example's VPC without its Lambda endpoint (the retry function checkpoints through it)",
    configuration: EXAMPLE,
    plant: (template) => delete (template.Resources as Record<string, TemplateResource>)['KafkaLanesLambdaEndpoint'],
    found: /^OrdersRetryLambdaFunction is in a VPC and calls lambda \(its durable executions' checkpoints\), but the VPC has no lambda endpoint/,
  },
  {
    // (The retry function itself comes after the Lambda endpoint, for its checkpoints: its triggers follow through it.)
    fault: "a retry tier's trigger no longer after the stack's STS endpoint",
    configuration: EXAMPLE,
    plant: (template) => delete resource(template, retryTriggers(template)[0]!).Metadata,
    found: /^OrdersEventSourceMapping\w+retry1s does not depend on KafkaLanesStsEndpoint: on create, its pollers may start before the sts endpoint they use exists/,
  },
  {
    // The committer's schedule may invoke it as soon as it exists, and its first run reads the Redis AUTH token.
    fault: "the committer no longer after the stack's Secrets Manager endpoint",
    configuration: EXAMPLE,
    plant: (template) => delete resource(template, 'OrdersCommitterLambdaFunction').Metadata,
    found: /^OrdersCommitterLambdaFunction does not depend on KafkaLanesSecretsManagerEndpoint: on create, its first invocation may read the Redis AUTH token/,
  },
];
