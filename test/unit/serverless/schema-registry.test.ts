import { functionBlockSchema, validateBlock } from '../../../src/serverless/config';
import { compileSchemaRegistries, type Serverless } from '../../../src/serverless/framework';
import { groupGrants } from '../../../src/serverless/iam';
import { planFunction } from '../../../src/serverless/plan';
import type { FunctionView } from '../../../src/serverless/types';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const GLUE = 'arn:aws:glue:eu-west-1:123456789012:registry/shop';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:registry-abc123';
const service = { service: 'shop', stage: 'dev' };
const provisioned = { provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 2 } };

function mskFunction(settings: Record<string, unknown> = provisioned): FunctionView {
  return { handler: 'functions/orders.handler', events: [{ msk: { arn: ARN, topic: 'orders', ...settings } }] };
}

function plan(schemaRegistry: unknown, fn: FunctionView = mskFunction()): ReturnType<typeof planFunction> {
  const block = validateBlock(functionBlockSchema, { schemaRegistry }, 'functions.orders.kafkaLanes');
  if (block.value === undefined) return { problems: block.problems };
  return planFunction(service, 'orders', fn, block.value);
}

describe('kafkaLanes.schemaRegistry', () => {
  it('names what a wrong block gives, and what was expected', () => {
    // Act
    const { problems } = plan({ schemaRegistryUri: 'registry.example', eventRecordFormat: 'AVRO', extra: 1 });

    // Assess
    expect(problems).toEqual([
      expect.stringMatching(/^functions\.orders\.kafkaLanes\.schemaRegistry\.schemaRegistryUri: a Glue registry ARN .* or an http\(s\) URL, got "registry.example"$/),
      expect.stringMatching(/^functions\.orders\.kafkaLanes\.schemaRegistry\.eventRecordFormat: .*"SOURCE"\|"JSON", got "AVRO"$/),
      'functions.orders.kafkaLanes.schemaRegistry: unknown key `extra`',
    ]);
  });

  it('refuses an on-demand trigger, credentials for a Glue registry, two authentications, a part validated twice', () => {
    // Act
    const onDemand = plan({ schemaRegistryUri: GLUE }, mskFunction({}));
    const glueAuth = plan({ schemaRegistryUri: GLUE, accessConfigs: [{ type: 'BASIC_AUTH', uri: SECRET }] });
    const twoAuths = plan({ schemaRegistryUri: 'https://registry.example', accessConfigs: [{ type: 'BASIC_AUTH', uri: SECRET }, { type: 'CLIENT_CERTIFICATE_TLS_AUTH', uri: SECRET }] });
    const twice = plan({ schemaRegistryUri: GLUE, schemaValidationConfigs: [{ attribute: 'VALUE' }, { attribute: 'VALUE' }] });

    // Assess
    expect(onDemand.problems).toEqual([expect.stringMatching(/^functions\.orders\.kafkaLanes\.schemaRegistry: expected a trigger in provisioned mode .* got an on-demand trigger$/)]);
    expect(glueAuth.problems).toEqual([expect.stringContaining('accessConfigs: expected none for a Glue registry')]);
    expect(twoAuths.problems).toEqual([expect.stringContaining('expected at most one of BASIC_AUTH and CLIENT_CERTIFICATE_TLS_AUTH, and one SERVER_ROOT_CA_CERTIFICATE, got BASIC_AUTH, CLIENT_CERTIFICATE_TLS_AUTH')]);
    expect(twice.problems).toEqual(['functions.orders.kafkaLanes.schemaRegistry.schemaValidationConfigs: expected each of KEY and VALUE at most once, got VALUE, VALUE']);
  });

  it("tells the handler what its trigger delivers (SOURCE by default) and grants a Glue registry's reads on it alone", () => {
    // Act
    const { plan: planned, problems } = plan({ schemaRegistryUri: GLUE });
    const grants = groupGrants(planned!, false).handler;

    // Assess
    expect(problems).toEqual([]);
    expect(planned?.environment['KAFKA_LANES_EVENT_RECORD_FORMAT']).toBe('SOURCE');
    expect(grants).toContainEqual({ Effect: 'Allow', Action: ['glue:GetRegistry'], Resource: GLUE });
    expect(grants).toContainEqual({ Effect: 'Allow', Action: ['glue:GetSchemaVersion'], Resource: [GLUE, 'arn:aws:glue:eu-west-1:123456789012:schema/shop/*'] });
    expect(grants.filter((s) => s.Action.some((a) => a.startsWith('secretsmanager:')))).toEqual([]);
  });

  it("grants a Confluent registry's secret, decrypted through Secrets Manager only, and no Glue action", () => {
    // Act
    const { plan: planned } = plan({ schemaRegistryUri: 'https://registry.example', eventRecordFormat: 'JSON', accessConfigs: [{ type: 'BASIC_AUTH', uri: SECRET }] });
    const grants = groupGrants(planned!, false).handler;

    // Assess
    expect(planned?.environment['KAFKA_LANES_EVENT_RECORD_FORMAT']).toBe('JSON');
    expect(grants).toContainEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [SECRET] });
    expect(grants).toContainEqual(expect.objectContaining({ Action: ['kms:Decrypt'], Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } } }));
    expect(grants.filter((s) => s.Action.some((a) => a.startsWith('glue:')))).toEqual([]);
  });

  it("writes the source trigger's SchemaRegistryConfig beside its consumer group, and nothing on the retry triggers", () => {
    // Prepare: the template as the framework compiles an MSK trigger per topic.
    const { plan: planned } = plan({ schemaRegistryUri: GLUE, schemaValidationConfigs: [{ attribute: 'KEY' }, { attribute: 'VALUE' }] });
    const resources: Record<string, { Type: string; Properties: Record<string, unknown> }> = {
      OrdersEventSourceMappingMSKShopOrders: { Type: 'AWS::Lambda::EventSourceMapping', Properties: { AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: planned!.group } } },
      OrdersEventSourceMappingMSKShopRetry: { Type: 'AWS::Lambda::EventSourceMapping', Properties: {} },
    };
    const serverless = {
      service: { provider: { compiledCloudFormationTemplate: { Resources: resources } } },
      getProvider: () => ({ naming: { getMSKEventLogicalId: (_fn: string, cluster: string, topic: string) => `OrdersEventSourceMappingMSK${cluster[0]!.toUpperCase()}${cluster.slice(1)}${topic === 'orders' ? 'Orders' : 'Retry'}` } }),
    } as unknown as Serverless;

    // Act
    compileSchemaRegistries(serverless, [planned!]);

    // Assess
    expect(resources['OrdersEventSourceMappingMSKShopOrders']!.Properties['AmazonManagedKafkaEventSourceConfig']).toEqual({
      ConsumerGroupId: planned!.group,
      SchemaRegistryConfig: { SchemaRegistryURI: GLUE, EventRecordFormat: 'SOURCE', SchemaValidationConfigs: [{ Attribute: 'KEY' }, { Attribute: 'VALUE' }] },
    });
    expect(resources['OrdersEventSourceMappingMSKShopRetry']!.Properties).toEqual({});
  });
});
