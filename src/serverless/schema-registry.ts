/**
 * The trigger's own schema registry integration (`kafkaLanes.schemaRegistry`): an event source mapping in provisioned
 * mode validates the source topic's keys and/or values through an AWS Glue or a Confluent-compatible registry and
 * delivers them as `SOURCE` (the payload less its frame) or `JSON` (decoded). The plugin writes the mapping's
 * `SchemaRegistryConfig` (inside `AmazonManagedKafkaEventSourceConfig` or `SelfManagedKafkaEventSourceConfig`, per
 * CloudFormation's `AWS::Lambda::EventSourceMapping`), grants what the mapping reads with the function's role, and
 * tells the handler what it delivers (`KAFKA_LANES_EVENT_RECORD_FORMAT`). Only the source trigger gets it: retry copies
 * are written as the handler read them (docs/schema-registry.md, "The trigger's own schema registry integration").
 */
import { ENV } from '../options/constants';
import { GLUE_REGISTRY_ARN, type SchemaRegistryBlock } from './config';
import type { Statement, TriggerSettings } from './types';

/** A registry URI given as text that is not a Glue ARN is a Confluent-compatible registry's URL. */
function isConfluent(block: SchemaRegistryBlock): boolean {
  return typeof block.schemaRegistryUri === 'string' && !GLUE_REGISTRY_ARN.test(block.schemaRegistryUri);
}

/**
 * What AWS would refuse at deploy time, or what could not work: a schema registry on an on-demand trigger (the
 * integration exists in provisioned mode only), credentials for a Glue registry, a Confluent registry's access
 * configurations that repeat a type or give two authentications, a part validated twice.
 *
 * @example
 * schemaRegistryProblems('functions.orders.kafkaLanes.schemaRegistry', block, { topic: 'orders' });
 * // ['functions.orders.kafkaLanes.schemaRegistry: expected a trigger in provisioned mode ..., got an on-demand trigger']
 */
export function schemaRegistryProblems(where: string, block: SchemaRegistryBlock | undefined, trigger: TriggerSettings): string[] {
  if (block === undefined) return [];
  const problems: string[] = [];
  if (trigger.provisionedPollerConfig === undefined) {
    problems.push(
      `${where}: expected a trigger in provisioned mode (\`provisionedPollerConfig\` on its \`msk\` or \`kafka\` event): ` +
        `an event source mapping validates through a schema registry only in provisioned mode, got an on-demand trigger`,
    );
  }
  const access = block.accessConfigs ?? [];
  if (!isConfluent(block) && access.length > 0) {
    problems.push(`${where}.accessConfigs: expected none for a Glue registry (the mapping reads it with the function's role), got ${access.map((a) => a.type).join(', ')}`);
  }
  const types = access.map((a) => a.type);
  const auths = types.filter((type) => type !== 'SERVER_ROOT_CA_CERTIFICATE');
  if (new Set(types).size !== types.length || auths.length > 1) {
    problems.push(`${where}.accessConfigs: expected at most one of BASIC_AUTH and CLIENT_CERTIFICATE_TLS_AUTH, and one SERVER_ROOT_CA_CERTIFICATE, got ${types.join(', ')}`);
  }
  const attributes = (block.schemaValidationConfigs ?? []).map((config) => config.attribute);
  if (new Set(attributes).size !== attributes.length) {
    problems.push(`${where}.schemaValidationConfigs: expected each of KEY and VALUE at most once, got ${attributes.join(', ')}`);
  }
  return problems;
}

/** What the handler is told: the format the mapping delivers, which `lanes()` reads as `eventRecordFormat`. */
export function schemaRegistryEnvironment(block: SchemaRegistryBlock | undefined): Record<string, string> {
  return block === undefined ? {} : { [ENV.eventRecordFormat]: block.eventRecordFormat ?? 'SOURCE' };
}

/** The mapping's `SchemaRegistryConfig`, as CloudFormation takes it. */
export function schemaRegistryConfig(block: SchemaRegistryBlock): Record<string, unknown> {
  return {
    SchemaRegistryURI: block.schemaRegistryUri,
    EventRecordFormat: block.eventRecordFormat ?? 'SOURCE',
    SchemaValidationConfigs: (block.schemaValidationConfigs ?? [{ attribute: 'VALUE' }]).map((config) => ({ Attribute: config.attribute })),
    ...(block.accessConfigs === undefined ? {} : { AccessConfigs: block.accessConfigs.map((config) => ({ Type: config.type, URI: config.uri })) }),
  };
}

/**
 * A Glue registry's reads, made by the mapping with the function's role: `GetRegistry` and `GetSchemaVersion` on that
 * registry and its schemas only (what AWS CDK's `GlueSchemaRegistry` grants). The handler's own schema reads
 * (`avro({ glue })` on a `SOURCE` record framed again) fall under the same grant. None for a Confluent registry.
 *
 * @example
 * glueRegistryGrants({ schemaRegistryUri: 'arn:aws:glue:eu-west-1:123456789012:registry/shop' });
 * // [{ Action: ['glue:GetRegistry'], Resource: '...:registry/shop' }, { Action: ['glue:GetSchemaVersion'], Resource: ['...:registry/shop', '...:schema/shop/*'] }]
 */
export function glueRegistryGrants(block: SchemaRegistryBlock | undefined): Statement[] {
  if (block === undefined || isConfluent(block)) return [];
  const registry = block.schemaRegistryUri;
  const schemas =
    typeof registry === 'string'
      ? registry.replace(/:registry\/([^/]+)$/, ':schema/$1/*')
      : // Known at deploy time: cut at `:registry/` by CloudFormation, as mskArns cuts a cluster ARN.
        { 'Fn::Join': ['', [{ 'Fn::Select': [0, { 'Fn::Split': [':registry/', registry] }] }, ':schema/', { 'Fn::Select': [1, { 'Fn::Split': [':registry/', registry] }] }, '/*']] };
  return [
    { Effect: 'Allow', Action: ['glue:GetRegistry'], Resource: registry },
    { Effect: 'Allow', Action: ['glue:GetSchemaVersion'], Resource: [registry, schemas] },
  ];
}

/** The Secrets Manager secrets a Confluent registry's mapping reads with the function's role (its `accessConfigs`). */
export function schemaRegistrySecrets(block: SchemaRegistryBlock | undefined): unknown[] {
  return block === undefined || !isConfluent(block) ? [] : (block.accessConfigs ?? []).map((config) => config.uri);
}
