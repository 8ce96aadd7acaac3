import { ENV } from '../options/constants';
import { parseSecretRef } from '../options/secret-ref';

// On create, a group's triggers and its functions in a VPC come after the stack's interface endpoints they need: an
// MSK trigger's pollers invoke the function and take its role through the Lambda and STS endpoints of the cluster's
// VPC (Lambda developer guide, "Amazon MSK network configuration"), and a function reads its secrets through the
// Secrets Manager (or SSM) endpoint at its first invocation, which a schedule or a trigger may make at once. Pure.

/** An interface endpoint the service's own CloudFormation declares (`resources:`), and the AWS service it reaches. */
export interface StackEndpoint {
  readonly id: string;
  /** The last part of its `ServiceName`: `lambda`, `sts`, `secretsmanager`, `ssm`, ... */
  readonly service: string;
  /** Its `Condition`, when it is created only in some configurations. */
  readonly condition?: string;
}

/** A resource of the compiled template, as far as this module writes it. */
export interface OrderedResource {
  DependsOn?: string | string[];
  Metadata?: Record<string, unknown>;
}

/** The key of a resource's `Metadata` under which a conditional dependency is written. */
export const AFTER_METADATA = 'KafkaLanesAfter';

/** The AWS services a trigger's pollers call: Lambda (to invoke) and STS (to take the function's role). */
export const POLLER_SERVICES: readonly string[] = ['lambda', 'sts'];

/**
 * The interface endpoints among the stack's resources, each with the service its `ServiceName` names (a string, or
 * `Fn::Sub` / `Fn::Join` of `com.amazonaws.<region>.<service>`).
 *
 * @example
 * stackEndpoints({ KafkaLanesStsEndpoint: { Type: 'AWS::EC2::VPCEndpoint', Condition: 'Wanted', Properties: { ServiceName: { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.sts' } } } });
 * // [{ id: 'KafkaLanesStsEndpoint', service: 'sts', condition: 'Wanted' }]
 */
export function stackEndpoints(resources: Readonly<Record<string, { Type?: unknown; Condition?: unknown; Properties?: Record<string, unknown> }>>): StackEndpoint[] {
  const endpoints: StackEndpoint[] = [];
  for (const [id, resource] of Object.entries(resources)) {
    if (resource.Type !== 'AWS::EC2::VPCEndpoint') continue;
    const service = /\.([a-z0-9-]+)$/.exec(serviceNameText(resource.Properties?.['ServiceName']))?.[1];
    if (service === undefined) continue;
    endpoints.push({ id, service, ...(typeof resource.Condition === 'string' ? { condition: resource.Condition } : {}) });
  }
  return endpoints;
}

/** A `ServiceName` as text: itself, or the text of its `Fn::Sub` or `Fn::Join` (a region left as `${AWS::Region}`). */
function serviceNameText(name: unknown): string {
  if (typeof name === 'string') return name;
  const value = (name ?? {}) as { 'Fn::Sub'?: unknown; 'Fn::Join'?: [string, unknown[]] };
  const sub = value['Fn::Sub'];
  if (typeof sub === 'string') return sub;
  if (Array.isArray(sub) && typeof sub[0] === 'string') return sub[0];
  const join = value['Fn::Join'];
  if (Array.isArray(join) && Array.isArray(join[1])) return join[1].map((part) => (typeof part === 'string' ? part : '')).join(String(join[0]));
  return '';
}

/**
 * The AWS services a function calls at run time, by what its environment names (docs/deploy.md, "AWS APIs the
 * deployed functions call"): Secrets Manager or SSM for a secret, MSK for a cluster's brokers, Lambda for a durable
 * execution's checkpoints (the retry function, told its execution timeout).
 *
 * @example
 * servicesCalled({ KAFKA_LANES_REDIS_AUTH_SECRET: 'ssm:/shop/redis-token' }); // ['ssm']
 */
export function servicesCalled(environment: Readonly<Record<string, unknown>>): string[] {
  const services = new Set<string>();
  for (const variable of [ENV.redisAuthSecret, ENV.saslSecret]) {
    const reference = environment[variable];
    if (reference === undefined || reference === '') continue;
    // A CloudFormation value (`!Ref` of a secret) is a Secrets Manager secret: SSM parameters are named by text.
    const ref = typeof reference === 'string' ? parseSecretRef(reference) : undefined;
    services.add(ref !== undefined && !('problem' in ref) && ref.store === 'ssm' ? 'ssm' : 'secretsmanager');
  }
  if (environment[ENV.mskClusterArn] !== undefined && environment[ENV.mskClusterArn] !== '') services.add('kafka');
  if (environment[ENV.retryExecutionTimeout] !== undefined) services.add('lambda');
  return [...services];
}

/**
 * Orders `resource` after the stack's endpoints of `services`: `DependsOn` an endpoint every configuration creates,
 * and for one created under a condition a `Ref` inside `Fn::If` in the resource's `Metadata` (CloudFormation refuses a
 * `DependsOn` on a resource its condition leaves out, and takes no `Fn::If` in `DependsOn`; a `Ref` in `Metadata`
 * orders the two like any other `Ref`).
 *
 * @example
 * orderAfter(mapping, [{ id: 'KafkaLanesLambdaEndpoint', service: 'lambda', condition: 'KafkaLanesLambdaEndpointWanted' }], ['lambda', 'sts']);
 * // mapping.Metadata.KafkaLanesAfter: [{ 'Fn::If': ['KafkaLanesLambdaEndpointWanted', { Ref: 'KafkaLanesLambdaEndpoint' }, { Ref: 'AWS::NoValue' }] }]
 */
export function orderAfter(resource: OrderedResource, endpoints: readonly StackEndpoint[], services: readonly string[]): void {
  const needed = endpoints.filter((endpoint) => services.includes(endpoint.service));
  const always = needed.filter((endpoint) => endpoint.condition === undefined).map((endpoint) => endpoint.id);
  const conditional = needed.filter((endpoint) => endpoint.condition !== undefined);
  if (always.length > 0) {
    const after = resource.DependsOn === undefined ? [] : Array.isArray(resource.DependsOn) ? resource.DependsOn : [resource.DependsOn];
    resource.DependsOn = [...new Set([...after, ...always])];
  }
  if (conditional.length > 0) {
    resource.Metadata = {
      ...resource.Metadata,
      [AFTER_METADATA]: conditional.map((endpoint) => ({ 'Fn::If': [endpoint.condition, { Ref: endpoint.id }, { Ref: 'AWS::NoValue' }] })),
    };
  }
}
