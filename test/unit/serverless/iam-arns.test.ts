import { mergeStatements, mskArns, rolePolicyLength } from '../../../src/serverless/iam';

const CLUSTER = 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders-cluster/0a1b2c3d-4e5f-6789-abcd-ef0123456789-s1';
const TOPIC = 'arn:aws:kafka:eu-west-1:123456789012:topic/orders-cluster/0a1b2c3d-4e5f-6789-abcd-ef0123456789-s1/orders';
const GROUP = 'arn:aws:kafka:eu-west-1:123456789012:group/orders-cluster/0a1b2c3d-4e5f-6789-abcd-ef0123456789-s1/orders-svc.lanes';

/**
 * What CloudFormation makes of a value at deploy time, for the functions the grants use; `Ref`, `Fn::ImportValue`,
 * `Fn::Sub` and `Fn::GetAtt` stand for the cluster ARN the stack would give them.
 */
function evaluate(value: unknown): unknown {
  if (typeof value === 'string' || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(evaluate);
  const [[fn, args]] = Object.entries(value) as [[string, unknown]];
  switch (fn) {
    case 'Ref':
    case 'Fn::ImportValue':
    case 'Fn::Sub':
    case 'Fn::GetAtt':
      return CLUSTER;
    case 'Fn::Split': {
      const [separator, text] = args as [string, unknown];
      return String(evaluate(text)).split(separator);
    }
    case 'Fn::Select': {
      const [index, list] = args as [number, unknown];
      return (evaluate(list) as unknown[])[index];
    }
    case 'Fn::Join': {
      const [separator, list] = args as [string, unknown];
      return (evaluate(list) as unknown[]).map(String).join(separator);
    }
    default:
      throw new Error(`no evaluation for ${fn}`);
  }
}

describe('mskArns', () => {
  it.each([
    ['a Ref', { Ref: 'KafkaLanesMsk' }],
    ['an import', { 'Fn::ImportValue': 'shop-kafka-arn' }],
    ['a Fn::Sub', { 'Fn::Sub': 'arn:${AWS::Partition}:kafka:${AWS::Region}:${AWS::AccountId}:cluster/orders-cluster/${ClusterUuid}' }],
    ['a Fn::Join', { 'Fn::Join': [':', ['arn:aws:kafka:eu-west-1:123456789012', 'cluster/orders-cluster/0a1b2c3d-4e5f-6789-abcd-ef0123456789-s1']] }],
  ])('cuts the topic and group ARNs of a cluster named orders-cluster out of %s at deploy time', (_what, cluster) => {
    // Act
    const arns = mskArns(cluster);

    // Assess
    expect({ topic: evaluate(arns.topic('orders')), group: evaluate(arns.group('orders-svc.lanes')), cluster: arns.cluster }).toEqual({
      topic: TOPIC,
      group: GROUP,
      cluster,
    });
  });

  it('writes them at package time for an ARN given as text', () => {
    const arns = mskArns(CLUSTER);
    expect({ topic: arns.topic('orders'), group: arns.group('orders-svc.lanes'), cluster: arns.cluster }).toEqual({ topic: TOPIC, group: GROUP, cluster: CLUSTER });
  });
});

describe('mergeStatements', () => {
  it('merges the actions on one resource, then the resources of one action set; conditions stay apart', () => {
    // Prepare
    const viaSecretsManager = { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } };

    // Act
    const merged = mergeStatements([
      { Effect: 'Allow', Action: ['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'], Resource: CLUSTER },
      { Effect: 'Allow', Action: ['kafka-cluster:Connect', 'kafka-cluster:WriteDataIdempotently'], Resource: CLUSTER },
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:a'] },
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:b' },
      { Effect: 'Allow', Action: ['kms:Decrypt'], Resource: 'arn:aws:kms:eu-west-1:123456789012:key/*', Condition: viaSecretsManager },
      { Effect: 'Allow', Action: ['kms:Decrypt'], Resource: 'arn:aws:kms:eu-west-1:123456789012:key/*' },
      { Effect: 'Allow', Action: ['ec2:DescribeVpcs'], Resource: '*' },
      { Effect: 'Allow', Action: ['ec2:DescribeVpcs'], Resource: 'arn:aws:ec2:eu-west-1:123456789012:vpc/vpc-1' },
    ]);

    // Assess
    expect(merged).toEqual([
      { Effect: 'Allow', Action: ['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration', 'kafka-cluster:WriteDataIdempotently'], Resource: CLUSTER },
      {
        Effect: 'Allow',
        Action: ['secretsmanager:GetSecretValue'],
        Resource: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:a', 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:b'],
      },
      { Effect: 'Allow', Action: ['kms:Decrypt'], Resource: 'arn:aws:kms:eu-west-1:123456789012:key/*', Condition: viaSecretsManager },
      { Effect: 'Allow', Action: ['kms:Decrypt'], Resource: 'arn:aws:kms:eu-west-1:123456789012:key/*' },
      { Effect: 'Allow', Action: ['ec2:DescribeVpcs'], Resource: '*' },
    ]);
  });
});

describe('rolePolicyLength', () => {
  it('counts a policy without white space, values known at deploy time at their longest', () => {
    // Prepare
    const document = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['kafka-cluster:Connect'], Resource: { Ref: 'KafkaLanesMsk' } }] };
    const literal = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['kafka-cluster:Connect'], Resource: CLUSTER }] };

    // Act
    const [byRef, byText] = [document, literal].map((policy) => rolePolicyLength({ Properties: { Policies: [{ PolicyName: 'p', PolicyDocument: policy }] } }));

    // Assess
    expect(byText).toBe(JSON.stringify(literal).length);
    expect(byRef).toBeGreaterThan(byText!);
  });
});
