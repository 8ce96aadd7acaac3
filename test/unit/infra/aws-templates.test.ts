import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The framework's own loader for `${file(...)}` in serverless.yml: js-yaml with the CloudFormation schema
// (!Ref, !Sub, !GetAtt, !If ...), so the template is read exactly as `serverless package` reads it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parse = require('osls/lib/utils/fs/parse') as (path: string, contents: Buffer) => unknown;

type Node = Record<string, unknown>;
interface Template {
  readonly AWSTemplateFormatVersion?: string;
  readonly Parameters: Record<string, Node>;
  readonly Conditions: Record<string, unknown>;
  readonly Resources: Record<string, { Type: string; Condition?: string; DeletionPolicy?: string; Properties: Node }>;
  readonly Outputs: Record<string, { Value: unknown }>;
}

const DIR = join(__dirname, '../../../infra/aws');
const read = (file: string): Template => parse(join(DIR, file), readFileSync(join(DIR, file))) as Template;
const FILES = readdirSync(DIR).filter((file) => file.endsWith('.yml'));
const template = read('redis.yml');
const network = read('network.yml');

/** Every name the template refers to: Ref, Fn::GetAtt, ${...} inside Fn::Sub, Condition and Fn::If names. */
function references(node: unknown, found: Array<{ kind: 'ref' | 'condition'; name: string }> = []): typeof found {
  if (Array.isArray(node)) node.forEach((item) => references(item, found));
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'Ref' && typeof value === 'string') found.push({ kind: 'ref', name: value });
      else if (key === 'Fn::GetAtt') found.push({ kind: 'ref', name: Array.isArray(value) ? String(value[0]) : String(value).split('.')[0] ?? '' });
      else if (key === 'Fn::Sub' && typeof value === 'string') {
        for (const match of value.matchAll(/\$\{([^}!]+)\}/g)) found.push({ kind: 'ref', name: (match[1] ?? '').split('.')[0] ?? '' });
      } else if (key === 'Fn::If' && Array.isArray(value)) found.push({ kind: 'condition', name: String(value[0]) });
      else if (key === 'Condition' && typeof value === 'string') found.push({ kind: 'condition', name: value });
      references(value, found);
    }
  }
  return found;
}

describe.each(FILES)('infra/aws/%s', (file) => {
  it('is a CloudFormation fragment serverless can merge: only sections it merges, every name defined by the fragments included together', () => {
    const fragment = read(file);
    // Included together (serverless.yml): network.yml, one msk-*.yml, redis.yml.
    const together = [fragment, network, ...(file === 'redis.yml' ? [] : [template])];
    expect(['AWSTemplateFormatVersion', 'Conditions', 'Outputs', 'Parameters', 'Resources']).toEqual(expect.arrayContaining(Object.keys(fragment)));
    const defined = new Set(together.flatMap((part) => [...Object.keys(part.Parameters ?? {}), ...Object.keys(part.Resources)]));
    const conditions = new Set(together.flatMap((part) => Object.keys(part.Conditions ?? {})));
    for (const { kind, name } of references(fragment)) {
      if (kind === 'condition') expect(conditions).toContain(name);
      else if (!name.startsWith('AWS::')) expect(defined).toContain(name);
    }
    // Prefixed names: merged into a user's stack, they cannot clash with the user's own resources.
    for (const name of [...Object.keys(fragment.Parameters ?? {}), ...Object.keys(fragment.Resources), ...Object.keys(fragment.Outputs ?? {})]) {
      expect(name).toMatch(/^KafkaLanes/);
    }
  });
});

describe('infra/aws/redis.yml', () => {
  it('creates Redis in cluster mode, with TLS, at-rest encryption and an AUTH token from Secrets Manager', () => {
    const redis = template.Resources['KafkaLanesRedis'];
    expect(redis?.Type).toBe('AWS::ElastiCache::ReplicationGroup');
    expect(redis?.Properties).toMatchObject({
      Engine: 'redis',
      CacheParameterGroupName: 'default.redis7.cluster.on',
      NumNodeGroups: { Ref: 'KafkaLanesRedisShards' },
      AutomaticFailoverEnabled: true,
      TransitEncryptionEnabled: true,
      AtRestEncryptionEnabled: true,
      AuthToken: { 'Fn::Sub': '{{resolve:secretsmanager:${KafkaLanesRedisAuthSecret}:SecretString:token}}' },
    });
    expect(redis?.DeletionPolicy).toBe('Snapshot');
    const secret = template.Resources['KafkaLanesRedisAuthSecret'];
    expect(secret?.Type).toBe('AWS::SecretsManager::Secret');
    // ElastiCache refuses an AUTH token shorter than 16 or longer than 128 characters, or with @ " /.
    expect(secret?.Properties['GenerateSecretString']).toMatchObject({ GenerateStringKey: 'token', ExcludePunctuation: true });
    const length = (secret?.Properties['GenerateSecretString'] as Node)['PasswordLength'] as number;
    expect(length).toBeGreaterThanOrEqual(16);
    expect(length).toBeLessThanOrEqual(128);
  });

  it('lets only the functions reach Redis, and offers only engine versions of its parameter group', () => {
    const ingress = template.Resources['KafkaLanesRedisSecurityGroup']?.Properties['SecurityGroupIngress'];
    expect(ingress).toEqual([
      expect.objectContaining({ IpProtocol: 'tcp', FromPort: 6379, ToPort: 6379, SourceSecurityGroupId: { Ref: 'KafkaLanesFunctionSecurityGroup' } }),
    ]);
    expect(template.Parameters['KafkaLanesRedisEngineVersion']?.['AllowedValues']).toEqual(['7.0', '7.1']);
  });

  it('outputs the value of KAFKA_LANES_REDIS_CLUSTER_NODES', () => {
    expect(template.Outputs['KafkaLanesRedisClusterNodes']?.Value).toEqual({
      'Fn::Sub': '${KafkaLanesRedis.ConfigurationEndPoint.Address}:${KafkaLanesRedis.ConfigurationEndPoint.Port}',
    });
  });
});

describe('infra/aws/network.yml', () => {
  it("lets the Kafka cluster's group in from itself (the trigger's pollers) and from the functions", () => {
    expect(network.Resources['KafkaLanesKafkaSelfIngress']?.Properties).toMatchObject({
      GroupId: { Ref: 'KafkaLanesKafkaSecurityGroup' },
      SourceSecurityGroupId: { Ref: 'KafkaLanesKafkaSecurityGroup' },
      FromPort: 9092,
      ToPort: 9098,
    });
    expect(network.Resources['KafkaLanesKafkaSecurityGroup']?.Properties['SecurityGroupIngress']).toEqual([
      expect.objectContaining({ SourceSecurityGroupId: { Ref: 'KafkaLanesFunctionSecurityGroup' }, FromPort: 9092, ToPort: 9098 }),
    ]);
  });

  it('gives the trigger and the functions Lambda, STS and Secrets Manager endpoints unless the VPC has its own way out, each one switchable', () => {
    const endpoints = Object.values(network.Resources).filter((resource) => resource.Type === 'AWS::EC2::VPCEndpoint' && resource.Properties['VpcEndpointType'] === 'Interface');
    expect(endpoints.map((endpoint) => [endpoint.Condition, endpoint.Properties['ServiceName']])).toEqual([
      ['KafkaLanesLambdaEndpointWanted', { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.lambda' }],
      ['KafkaLanesStsEndpointWanted', { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.sts' }],
      ['KafkaLanesSecretsManagerEndpointWanted', { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.secretsmanager' }],
    ]);
    for (const [service, parameter] of [['Lambda', 'KafkaLanesCreateLambdaEndpoint'], ['Sts', 'KafkaLanesCreateStsEndpoint'], ['SecretsManager', 'KafkaLanesCreateSecretsManagerEndpoint']]) {
      // Wanted only when endpoints are wanted at all (no NAT of the VPC's own) and this one is not switched off.
      expect(network.Conditions[`KafkaLanes${service}EndpointWanted`]).toEqual({
        'Fn::And': [{ Condition: 'KafkaLanesEndpoints' }, { 'Fn::Equals': [{ Ref: parameter }, 'true'] }],
      });
    }
  });

  it('needs no route to S3 and no MSK API endpoint: nothing in the VPC answers CloudFormation or asks MSK', () => {
    const services = Object.values(network.Resources).filter((resource) => resource.Type === 'AWS::EC2::VPCEndpoint').map((resource) => JSON.stringify(resource.Properties['ServiceName']));
    expect(services.filter((name) => /\.s3"|kafka/.test(name))).toEqual([]);
  });
});
