/**
 * The Serverless Framework as the plugin sees it: the parts of its `serverless` object the plugin uses, and the
 * passes the plugin makes over the template the framework compiled.
 */
import type { FunctionPlan, FunctionView, TriggerSettings } from './types';
import { schemaRegistryConfig } from './schema-registry';

/** The parts of the framework's `serverless` object the plugin uses (osls, the Serverless Framework v3 line). */
export interface Serverless {
  readonly serviceDir?: string;
  readonly config: { readonly servicePath: string };
  readonly classes: { readonly Error: new (message: string, code?: string) => Error };
  readonly configSchemaHandler: {
    defineFunctionProperties(provider: string, schema: Record<string, unknown>): void;
    defineCustomProperties(schema: Record<string, unknown>): void;
  };
  readonly service: {
    service: string;
    custom?: Record<string, unknown>;
    package?: { patterns?: string[]; excludeDevDependencies?: boolean; individually?: boolean };
    provider: {
      name: string;
      stage?: string;
      region?: string;
      runtime?: string;
      timeout?: number;
      logRetentionInDays?: number;
      stackParameters?: Array<{ ParameterKey?: string }>;
      environment?: Record<string, unknown>;
      iam?: { role?: string | { statements?: Array<Record<string, unknown>>; managedPolicies?: unknown[]; permissionsBoundary?: unknown } };
      compiledCloudFormationTemplate: { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    };
    functions: Record<string, FunctionView>;
    getAllFunctions(): string[];
  };
  readonly processedInput?: { readonly commands?: readonly string[]; readonly options?: { readonly param?: string | readonly string[] } };
  /** serverless.yml as written: its `params` per stage. */
  readonly configurationInput?: { readonly params?: Readonly<Record<string, Readonly<Record<string, unknown>> | null>> };
  getProvider(name: string): {
    naming: {
      getLambdaLogicalId(functionKey: string): string;
      getMSKEventLogicalId(functionKey: string, clusterName: string, topic: string): string;
      getKafkaEventLogicalId(functionKey: string, topic: string): string;
    };
    getStage(): string;
    getRegion(): string;
  };
}

export interface PluginUtils {
  readonly log: { notice(message: string): void; warning(message: string): void; info(message: string): void };
}

/** The cluster part of an MSK trigger's logical ID, as the framework takes it from the ARN (or `Ref` / import). */
export function mskClusterNameToken(arn: unknown): string {
  if (typeof arn === 'string') return arn.split('/')[1] ?? '';
  const intrinsic = (arn ?? {}) as Record<string, unknown>;
  return String(intrinsic['Fn::ImportValue'] ?? intrinsic['Ref'] ?? '');
}

/**
 * The framework writes `MaximumBatchingWindowInSeconds` only for a truthy `maximumBatchingWindow`, so `0` would
 * become AWS's default for Kafka event sources (500 ms): every trigger given `0` gets it written, the retry
 * tiers' included.
 */
export function keepZeroBatchingWindows(serverless: Serverless): void {
  const { service } = serverless;
  const naming = serverless.getProvider('aws').naming;
  const resources = service.provider.compiledCloudFormationTemplate.Resources;
  for (const key of service.getAllFunctions()) {
    for (const event of service.functions[key]?.events ?? []) {
      const msk = (event as { msk?: { arn?: unknown; topic: string; maximumBatchingWindow?: number } }).msk;
      const kafka = (event as { kafka?: { topic: string; maximumBatchingWindow?: number } }).kafka;
      if ((msk ?? kafka)?.maximumBatchingWindow !== 0) continue;
      const logicalId =
        msk !== undefined ? naming.getMSKEventLogicalId(key, mskClusterNameToken(msk.arn), msk.topic) : naming.getKafkaEventLogicalId(key, kafka!.topic);
      const resource = resources[logicalId];
      if (resource !== undefined) resource.Properties['MaximumBatchingWindowInSeconds'] = 0;
    }
  }
}

/**
 * The logical ID of the function an event source mapping invokes: `Fn::GetAtt [<fn>, Arn]`, or for a function the
 * framework invokes through an alias (a durable function's `durable`), `Fn::Join [':', [Fn::GetAtt [<fn>, Arn], <alias>]]`.
 *
 * @example
 * mappingTarget({ FunctionName: { 'Fn::Join': [':', [{ 'Fn::GetAtt': ['OrdersRetryLambdaFunction', 'Arn'] }, 'durable']] } }); // 'OrdersRetryLambdaFunction'
 */
export function mappingTarget(properties: Readonly<Record<string, unknown>>): string | undefined {
  const name = properties['FunctionName'] as { 'Fn::GetAtt'?: unknown[]; 'Fn::Join'?: [string, unknown[]] } | undefined;
  const getAtt = name?.['Fn::GetAtt'] ?? (name?.['Fn::Join']?.[1]?.[0] as { 'Fn::GetAtt'?: unknown[] } | undefined)?.['Fn::GetAtt'];
  const target = getAtt?.[0];
  return typeof target === 'string' ? target : undefined;
}

/** A provisioned-mode group's triggers report partial batch failures (the only mode where Kafka triggers honour them). */
export function compileResponseTypes(serverless: Serverless, plans: readonly FunctionPlan[]): void {
  const provider = serverless.getProvider('aws');
  const resources = serverless.service.provider.compiledCloudFormationTemplate.Resources;
  for (const plan of plans) {
    if (plan.mode !== 'provisioned') continue;
    const functions = [plan.functionKey, plan.retry.key].map((key) => provider.naming.getLambdaLogicalId(key));
    for (const resource of Object.values(resources)) {
      if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
      if (!functions.includes(mappingTarget(resource.Properties) ?? '')) continue;
      resource.Properties['FunctionResponseTypes'] = ['ReportBatchItemFailures'];
    }
  }
}

/**
 * The handler's role is updated after the retry triggers: on an upgrade from a release whose handler consumed the retry
 * tiers, its role loses their reads only once every tier's trigger invokes the retry function (whose role reads them),
 * so no trigger polls with a role that may no longer read its topic. `role` is the handler's role resource.
 *
 * @example
 * const role = { Type: 'AWS::IAM::Role', Properties: {} };
 * afterRetryTriggers(role, ['OrdersEventSourceMappingMSKShopOrderssvcretry5s']); // role.DependsOn: ['OrdersEventSourceMappingMSKShopOrderssvcretry5s']
 */
export function afterRetryTriggers(role: { DependsOn?: string | string[] }, retryTriggers: readonly string[]): void {
  const after = role.DependsOn === undefined ? [] : Array.isArray(role.DependsOn) ? role.DependsOn : [role.DependsOn];
  const all = [...new Set([...after, ...retryTriggers])];
  if (all.length > 0) role.DependsOn = all;
}

/**
 * Writes each planned source trigger's `SchemaRegistryConfig` (schema-registry.ts) into the template the framework
 * compiled (its `msk` and `kafka` events have no such key): beside the `ConsumerGroupId` of its `AmazonManagedKafkaEventSourceConfig` (MSK) or
 * `SelfManagedKafkaEventSourceConfig`.
 */
export function compileSchemaRegistries(serverless: Serverless, plans: readonly FunctionPlan[]): void {
  const naming = serverless.getProvider('aws').naming;
  const resources = serverless.service.provider.compiledCloudFormationTemplate.Resources;
  for (const plan of plans) {
    if (plan.schemaRegistry === undefined) continue;
    const msk = 'msk' in plan.source ? plan.source.msk : undefined;
    const logicalId = msk !== undefined ? naming.getMSKEventLogicalId(plan.functionKey, mskClusterNameToken(msk.arn), msk.topic) : naming.getKafkaEventLogicalId(plan.functionKey, (plan.source as { kafka: TriggerSettings }).kafka.topic);
    const resource = resources[logicalId];
    if (resource === undefined) continue;
    const field = msk !== undefined ? 'AmazonManagedKafkaEventSourceConfig' : 'SelfManagedKafkaEventSourceConfig';
    resource.Properties[field] = { ...(resource.Properties[field] as object | undefined), SchemaRegistryConfig: schemaRegistryConfig(plan.schemaRegistry) };
  }
}
