import { orderAfter, POLLER_SERVICES, servicesCalled, stackEndpoints } from '../../../src/serverless/endpoint-order';

const endpoint = (service: string, condition?: string) => ({
  Type: 'AWS::EC2::VPCEndpoint',
  ...(condition === undefined ? {} : { Condition: condition }),
  Properties: { ServiceName: { 'Fn::Sub': `com.amazonaws.\${AWS::Region}.${service}` }, VpcEndpointType: 'Interface' },
});

describe('the order after the stack\'s endpoints', () => {
  it('finds the interface endpoints of the stack and the service each reaches, whatever form its name takes', () => {
    // Act
    const found = stackEndpoints({
      Lambda: endpoint('lambda', 'LambdaWanted'),
      Sts: { Type: 'AWS::EC2::VPCEndpoint', Properties: { ServiceName: 'com.amazonaws.eu-west-1.sts' } },
      Secrets: { Type: 'AWS::EC2::VPCEndpoint', Properties: { ServiceName: { 'Fn::Join': ['', ['com.amazonaws.', { Ref: 'AWS::Region' }, '.secretsmanager']] } } },
      Bucket: { Type: 'AWS::S3::Bucket', Properties: {} },
    });

    // Assess
    expect(found).toEqual([
      { id: 'Lambda', service: 'lambda', condition: 'LambdaWanted' },
      { id: 'Sts', service: 'sts' },
      { id: 'Secrets', service: 'secretsmanager' },
    ]);
  });

  it('names the services a function calls by its environment: its secrets\' store, MSK for a cluster ARN, Lambda for checkpoints', () => {
    expect(servicesCalled({ KAFKA_LANES_REDIS_AUTH_SECRET: { Ref: 'Secret' }, KAFKA_LANES_SASL_SECRET: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:s' })).toEqual(['secretsmanager']);
    expect(servicesCalled({ KAFKA_LANES_REDIS_AUTH_SECRET: 'ssm:/shop/token', KAFKA_LANES_MSK_CLUSTER_ARN: 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/x' })).toEqual(['ssm', 'kafka']);
    expect(servicesCalled({ KAFKA_LANES_GROUP: 'g', KAFKA_LANES_REDIS_AUTH_SECRET: '' })).toEqual([]);
    // The retry function checkpoints its durable executions through Lambda's API.
    expect(servicesCalled({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '900' })).toEqual(['lambda']);
  });

  it('depends on an endpoint every configuration creates, and refers to one created under a condition from Metadata', () => {
    // Prepare
    const endpoints = stackEndpoints({ Lambda: endpoint('lambda', 'LambdaWanted'), Sts: endpoint('sts'), Secrets: endpoint('secretsmanager', 'SecretsWanted') });
    const trigger: { DependsOn?: string | string[]; Metadata?: Record<string, unknown> } = { DependsOn: ['Role'] };

    // Act
    orderAfter(trigger, endpoints, POLLER_SERVICES);

    // Assess: CloudFormation refuses a DependsOn on a resource its condition leaves out
    expect(trigger).toEqual({
      DependsOn: ['Role', 'Sts'],
      Metadata: { KafkaLanesAfter: [{ 'Fn::If': ['LambdaWanted', { Ref: 'Lambda' }, { Ref: 'AWS::NoValue' }] }] },
    });
  });

  it('changes nothing for a resource that needs none of the endpoints', () => {
    const fn = { DependsOn: 'Logs' };
    orderAfter(fn, stackEndpoints({ Lambda: endpoint('lambda') }), ['secretsmanager']);
    expect(fn).toEqual({ DependsOn: 'Logs' });
  });
});
