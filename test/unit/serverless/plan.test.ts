import { customBlockSchema, functionBlockSchema, validateBlock } from '../../../src/serverless/config';
import { groupGrants } from '../../../src/serverless/iam';
import { nameTheService, planFunction } from '../../../src/serverless/plan';
import type { FunctionView, Statement } from '../../../src/serverless/types';
import { topicsResource } from '../../../src/serverless/topics-resource';
import { version } from '../../../package.json';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const service = { service: 'shop', stage: 'dev' };

function mskFunction(settings: Record<string, unknown> = {}, extra: Partial<FunctionView> = {}): FunctionView {
  return { handler: 'functions/orders.handler', events: [{ msk: { arn: ARN, topic: 'orders', ...settings } }], ...extra };
}

describe('validateBlock', () => {
  it('names an unknown key of the kafkaLanes block', () => {
    // Act
    const { problems } = validateBlock(functionBlockSchema, { group: 'g', retryTier: ['5s'] }, 'functions.orders.kafkaLanes');

    // Assess
    expect(problems).toEqual(['functions.orders.kafkaLanes: unknown key `retryTier`']);
  });

  it('names a wrong value, what was expected and what was given', () => {
    // Act
    const { problems } = validateBlock(functionBlockSchema, { retryTiers: ['5s', '1 minute'] }, 'functions.orders.kafkaLanes');

    // Assess
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^functions\.orders\.kafkaLanes\.retryTiers\.1: a duration .*got "1 minute"$/);
  });

  it('accepts the service-level offline block with a broker per MSK cluster ARN', () => {
    // Act
    const { value, problems } = validateBlock(customBlockSchema, { offline: { brokers: { [ARN]: '127.0.0.1:9092' }, committerInterval: '2s' } }, 'custom.kafkaLanes');

    // Assess
    expect(problems).toEqual([]);
    expect(value?.offline?.committerInterval).toBe('2s');
  });
});

describe('planFunction', () => {
  it('derives the group from the deployed function name and sets the trigger consumer group to it', () => {
    // Act
    const { plan, problems } = planFunction(service, 'orders', mskFunction(), {});

    // Assess
    expect(problems).toEqual([]);
    expect(plan?.group).toBe('shop-dev-orders');
    expect(plan?.source).toEqual({ msk: { arn: ARN, topic: 'orders', consumerGroupId: 'shop-dev-orders' } });
  });

  it('adds one trigger per retry tier for the retry function, read from the start, each in a group of its own', () => {
    // Act
    const { plan } = planFunction(service, 'orders', mskFunction({ batchSize: 500, startingPosition: 'LATEST', filterPatterns: [{ value: { a: [1] } }] }), {
      group: 'orders-svc',
      retryTiers: ['5s', '1m'],
    });

    // Assess
    expect(plan?.retryTriggers).toEqual([
      { msk: { arn: ARN, topic: 'orders-svc.retry.5s', batchSize: 500, startingPosition: 'TRIM_HORIZON', consumerGroupId: 'orders-svc.retry.5s' } },
      { msk: { arn: ARN, topic: 'orders-svc.retry.1m', batchSize: 500, startingPosition: 'TRIM_HORIZON', consumerGroupId: 'orders-svc.retry.1m' } },
    ]);
  });

  it.each([
    ['on-demand', {}, 'false'],
    ['provisioned', { provisionedPollerConfig: { minimumPollers: 1 } }, 'true'],
  ])('sets partialBatchResponse for %s mode', (mode, settings, partial) => {
    // Act
    const { plan } = planFunction(service, 'orders', mskFunction(settings), { group: 'orders-svc' });

    // Assess
    expect(plan?.mode).toBe(mode);
    expect(plan?.environment).toEqual({
      KAFKA_LANES_MSK_CLUSTER_ARN: ARN,
      KAFKA_LANES_SASL_MECHANISM: 'aws-iam',
      KAFKA_LANES_GROUP: 'orders-svc',
      KAFKA_LANES_OUTPUTS: '',
      KAFKA_LANES_RETRY_TIERS: '5s,1m,10m',
      KAFKA_LANES_DEAD_LETTER_POLICY: 'release',
      KAFKA_LANES_ORDERING: 'key',
      KAFKA_LANES_PARTIAL_BATCH_RESPONSE: partial,
    });
  });

  it("gives both functions the block's ordering, which the committer's recovery rebuilds lanes by", () => {
    // Act
    const { plan, problems } = planFunction(service, 'orders', mskFunction({}), { group: 'orders-svc', ordering: 'partition' });

    // Assess
    expect(problems).toEqual([]);
    expect(plan?.environment).toMatchObject({ KAFKA_LANES_ORDERING: 'partition' });
    expect(plan?.committer?.definition.environment).toMatchObject({ KAFKA_LANES_ORDERING: 'partition' });
  });

  it('passes Redis and brokers to the handler and the committer, and schedules the committer', () => {
    // Act
    const { plan } = planFunction(service, 'orders', mskFunction({}, { vpc: { subnetIds: ['subnet-1'] } }), {
      group: 'orders-svc',
      redis: { clusterNodes: ['r1:6379', 'r2:6379'] },
      kafka: { brokers: ['b1:9098'] },
      committer: { schedule: 'rate(5 minutes)' },
    });

    // Assess
    expect(plan?.environment).toMatchObject({ KAFKA_LANES_REDIS_CLUSTER_NODES: 'r1:6379,r2:6379', KAFKA_LANES_BROKERS: 'b1:9098' });
    expect(plan?.committer).toEqual({
      key: 'ordersCommitter',
      definition: {
        name: 'shop-dev-orders-committer',
        description: 'kafka-lanes committer of group orders-svc: commits the frontier to orders-svc.lanes',
        timeout: 60,
        events: [{ schedule: { rate: ['rate(5 minutes)'], enabled: true } }],
        // The group's settings resolved once: the committer gets exactly what the handler gets.
        environment: plan?.environment,
        vpc: { subnetIds: ['subnet-1'] },
      },
    });
  });

  it('takes a self-managed trigger bootstrap servers as brokers', () => {
    // Act
    const { plan } = planFunction(service, 'orders', { events: [{ kafka: { topic: 'orders', bootstrapServers: ['k1:9092', 'k2:9092'] } }] }, { group: 'g' });

    // Assess
    expect(plan?.environment['KAFKA_LANES_BROKERS']).toBe('k1:9092,k2:9092');
    expect(plan?.retryTriggers[0]).toEqual({ kafka: { topic: 'g.retry.5s', bootstrapServers: ['k1:9092', 'k2:9092'], startingPosition: 'TRIM_HORIZON', consumerGroupId: 'g.retry.5s' } });
  });

  it.each([
    ['a timeout over 14 minutes', mskFunction({}, { timeout: 900 }), 'functions.orders.timeout: expected at most 840 seconds (14 minutes, the limit for a Kafka trigger), got 900'],
    ['a batch size over 10,000', mskFunction({ batchSize: 10_001 }), 'functions.orders.events.msk.batchSize: expected an integer from 1 to 10,000, got 10001'],
    ['a consumer group other than the group', mskFunction({ consumerGroupId: 'other' }), 'functions.orders.events.msk.consumerGroupId: expected the kafkaLanes group `orders-svc` (every framework name derives from it), got `other`'],
    ['no Kafka trigger', { handler: 'f.handler', events: [{ schedule: 'rate(1 minute)' }] }, 'functions.orders: a function with `kafkaLanes` needs exactly one `msk` or `kafka` event (its retry triggers are added for it), got 0'],
  ])('rejects %s', (_what, fn, message) => {
    // Act
    const { plan, problems } = planFunction(service, 'orders', fn, { group: 'orders-svc' });

    // Assess
    expect(plan).toBeUndefined();
    expect(problems).toEqual([message]);
  });

  it('rejects the provider timeout over 14 minutes when the function sets none', () => {
    // Act
    const { problems } = planFunction({ ...service, providerTimeout: 841 }, 'orders', mskFunction(), {});

    // Assess
    expect(problems).toEqual(['functions.orders.timeout: expected at most 840 seconds (14 minutes, the limit for a Kafka trigger), got 841']);
  });
});

describe('groupGrants', () => {
  const topicArn = (name: string): string => `arn:aws:kafka:eu-west-1:123456789012:topic/shop/abcd-1/${name}`;
  const groupArn = (name: string): string => `arn:aws:kafka:eu-west-1:123456789012:group/shop/abcd-1/${name}`;

  it('gives the handler its trigger reads and the hand-off writes, the retry function its triggers\' reads, the same writes and its checkpoints, the committer its commits and re-drive writes, none on "*"', () => {
    // Prepare
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g', retryTiers: ['5s', '1m'] });

    // Act
    const grants = groupGrants(plan!, true);

    // Assess
    const kafka = (statements: Statement[]): Array<[string[], unknown]> =>
      statements.filter((s) => s.Action.some((a) => a.startsWith('kafka-cluster:'))).map((s) => [[...s.Action], s.Resource]);
    const writes = [
      [['kafka-cluster:Connect', 'kafka-cluster:WriteDataIdempotently', 'kafka-cluster:DescribeClusterDynamicConfiguration'], ARN],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], [topicArn('g.retry.*'), topicArn('g.dlq')]],
    ];
    // The source trigger's reads are the handler's; each retry tier's trigger reads with the retry function's role.
    expect(kafka(grants.handler)).toEqual([
      [['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'], ARN],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], [topicArn('orders')]],
      [['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], [groupArn('g')]],
      ...writes,
    ]);
    expect(kafka(grants.retry)).toEqual([
      [['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration'], ARN],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], [topicArn('g.retry.5s'), topicArn('g.retry.1m')]],
      [['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], [groupArn('g.retry.5s'), groupArn('g.retry.1m')]],
      ...writes,
    ]);
    // Its durable executions' checkpoints, on the executions of its own versions only (the handler has none).
    expect(grants.retry).toContainEqual({
      Effect: 'Allow',
      Action: ['lambda:CheckpointDurableExecution', 'lambda:GetDurableExecutionState'],
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:shop-dev-orders-retry:*' },
    });
    expect(grants.handler.flatMap((statement) => statement.Action).filter((action) => action.startsWith('lambda:'))).toEqual([]);
    // The VPC's network interface actions and the trigger's network reads, each action once.
    for (const role of [grants.handler, grants.retry]) {
      const network = role.find((statement) => statement.Action.includes('ec2:DescribeVpcs'))!.Action;
      expect(network).toEqual([...new Set(network)]);
      expect(network).toContain('ec2:DescribeSubnets');
    }
    // The committer reads no cluster configuration: no DescribeClusterDynamicConfiguration (the trigger's).
    expect(kafka(grants.committer)).toEqual([
      [['kafka-cluster:Connect', 'kafka-cluster:WriteDataIdempotently'], ARN],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], [topicArn('g.retry.*'), topicArn('g.dlq')]],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], [topicArn('orders'), topicArn('g.retry.5s'), topicArn('g.retry.1m')]],
      // The completion group, and the recoveries' groups (one per read, under a granted prefix).
      [['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], [groupArn('g.lanes'), groupArn('g.lanes.recover.*')]],
      // Read only: what the triggers committed in their groups, checked against the frontiers.
      [['kafka-cluster:DescribeGroup'], [groupArn('g'), groupArn('g.retry.5s'), groupArn('g.retry.1m')]],
    ]);
    // The topics resource: describes and creates the group's topics (growing the source only when its partitions are
    // declared), reads how far a dropped tier's trigger got, never reads records, writes or deletes.
    expect(kafka(grants.topics)).toEqual([
      [['kafka-cluster:Connect'], ARN],
      [['kafka-cluster:DescribeTopic', 'kafka-cluster:DescribeTopicDynamicConfiguration', 'kafka-cluster:CreateTopic'], [topicArn('orders'), topicArn('g.retry.*'), topicArn('g.dlq')]],
      [['kafka-cluster:DescribeGroup'], groupArn('g.retry.*')],
    ]);
    // MSK's API is the provider's (outside the VPC), with the worker's invocation and its stack's status; the worker
    // (in the VPC) calls no AWS API.
    expect(grants.topicsProvider).toEqual([
      { Effect: 'Allow', Action: ['kafka:GetBootstrapBrokers'], Resource: ARN },
      { Effect: 'Allow', Action: ['lambda:InvokeFunction'], Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:shop-dev-orders-topicsvpc' } },
      { Effect: 'Allow', Action: ['cloudformation:DescribeStacks'], Resource: { Ref: 'AWS::StackId' } },
    ]);
    expect(grants.topics.flatMap((statement) => statement.Action).filter((action) => !action.startsWith('kafka-cluster:') && !action.startsWith('ec2:'))).toEqual([]);
    expect(grants.committer.flatMap((statement) => statement.Action)).not.toContain('kafka:GetBootstrapBrokers');
    // Only EC2 network interface actions (no resource-level permissions exist for them) are on "*".
    for (const statement of [...grants.handler, ...grants.retry, ...grants.committer, ...grants.topics]) {
      if (statement.Resource === '*') expect(statement.Action.every((action) => action.startsWith('ec2:'))).toBe(true);
    }
  });

  it('scopes grants on a cluster ARN known only at deploy time by cutting it in CloudFormation', () => {
    // Prepare
    const imported = { 'Fn::ImportValue': 'shop-kafka-arn' };
    const { plan } = planFunction(service, 'orders', { events: [{ msk: { arn: imported, topic: 'orders' } }] }, { group: 'g' });

    // Act
    const { committer } = groupGrants(plan!, false);

    // Assess
    const part = (index: number): unknown => ({ 'Fn::Select': [index, { 'Fn::Split': [':cluster/', imported] }] });
    expect(committer).toContainEqual({
      Effect: 'Allow',
      Action: ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
      Resource: [{ 'Fn::Join': ['', [part(0), ':group/', part(1), '/g.lanes']] }, { 'Fn::Join': ['', [part(0), ':group/', part(1), '/g.lanes.recover.*']] }],
    });
    expect(plan?.environment['KAFKA_LANES_MSK_CLUSTER_ARN']).toEqual(imported);
  });

  it('reads a SCRAM trigger secret (and decrypts it through Secrets Manager only), without MSK IAM reads', () => {
    // Prepare
    const secret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:s';
    const { plan } = planFunction(service, 'orders', mskFunction({ saslScram512: secret }), { group: 'g', kafka: { auth: 'tls' } });

    // Act
    const { handler, retry } = groupGrants(plan!, false);

    // Assess: both functions' triggers read the secret (the source's and the retry tiers')
    expect(retry).toContainEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [secret] });
    expect(handler).toContainEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [secret] });
    expect(handler).toContainEqual({
      Effect: 'Allow',
      Action: ['kms:Decrypt'],
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:eu-west-1:123456789012:key/*' },
      Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } },
    });
    expect(handler.filter((statement) => statement.Resource === '*' && statement.Condition === undefined).flatMap((statement) => statement.Action)).not.toContain('kms:Decrypt');
    expect(handler.flatMap((s) => s.Action).filter((a) => a.startsWith('kafka-cluster:'))).toEqual([]);
  });
});

describe('outputs and the topics resource', () => {
  const topicArn = (name: string): string => `arn:aws:kafka:eu-west-1:123456789012:topic/shop/abcd-1/${name}`;
  const ids = { providerLogicalId: 'OrdersTopicsLambdaFunction', workerLogicalId: 'OrdersTopicsVpcLambdaFunction', resourceLogicalId: 'OrdersKafkaLanesTopics' };
  const brokers = { 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] };

  it('lets the handler write the declared outputs only, and tells it which they are', () => {
    // Act
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g', outputs: ['shipments', 'invoices'] });
    const grants = groupGrants(plan!, false);

    // Assess
    expect(grants.handler).toContainEqual({ Effect: 'Allow', Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], Resource: [topicArn('shipments'), topicArn('invoices')] });
    expect(plan!.environment['KAFKA_LANES_OUTPUTS']).toBe('shipments,invoices');
    expect(grants.committer.flatMap((s) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]))).not.toContain(topicArn('shipments'));
    expect(plan!.topics.properties).toMatchObject({ Outputs: ['shipments', 'invoices'] });
  });

  it('refuses an output that is not a topic name, naming it', () => {
    expect(validateBlock(functionBlockSchema, { outputs: ['ship ments'] }, 'functions.orders.kafkaLanes').problems).toEqual([
      'functions.orders.kafkaLanes.outputs.0: topic names of letters, digits, `.`, `_` and `-`, got "ship ments"',
    ]);
  });

  it('grows the source only when its partitions are declared, and deletes retry and dead-letter topics only when asked', () => {
    // Act
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g', retryTiers: ['5s'], topics: { partitions: 6, deleteOnRemove: true, replicationFactor: 3 } });
    const { topics } = groupGrants(plan!, false);

    // Assess
    // The release among them (a kafka-lanes upgrade reruns the resource).
    expect(plan!.topics.properties).toEqual({ Group: 'g', Tiers: ['5s'], Source: 'orders', SourcePartitions: '6', ReplicationFactor: '3', DeleteOnRemove: 'true', Cluster: ARN, Listener: 'iam', Version: version });
    expect(topics).toContainEqual({ Effect: 'Allow', Action: ['kafka-cluster:AlterTopic'], Resource: topicArn('orders') });
    expect(topics).toContainEqual({ Effect: 'Allow', Action: ['kafka-cluster:DeleteTopic'], Resource: [topicArn('g.retry.*'), topicArn('g.dlq')] });
  });

  it('gives the handler and the committer the brokers the resource answers: one source, not the event', () => {
    // Act: producers on the trigger's IAM listener
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g' });
    const parts = topicsResource(plan!, ids);

    // Assess: the provider (outside the VPC) is the ServiceToken; the cluster and its listener are properties
    expect(parts.resource).toMatchObject({
      Type: 'Custom::KafkaLanesTopics',
      Properties: { ServiceToken: { 'Fn::GetAtt': ['OrdersTopicsLambdaFunction', 'Arn'] }, ServiceTimeout: '420', Cluster: plan!.environment['KAFKA_LANES_MSK_CLUSTER_ARN'], Listener: 'iam' },
    });
    expect(parts.providerEnvironment).toEqual({ KAFKA_LANES_TOPICS_WORKER: { Ref: 'OrdersTopicsVpcLambdaFunction' } });
    expect(parts.committerEnvironment['KAFKA_LANES_BROKERS']).toEqual(brokers);
    expect(parts.committerEnvironment['KAFKA_LANES_MSK_CLUSTER_ARN']).toBeUndefined();
    expect(parts).toMatchObject({ handlerEnvironment: { KAFKA_LANES_BROKERS: brokers }, removed: ['KAFKA_LANES_MSK_CLUSTER_ARN'] });
  });

  it("names the listener of the producers' auth, and gives the worker the Kafka auth without Redis", () => {
    // Act: the trigger reads with IAM, the producers write over TLS without SASL; Redis with an AUTH secret
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g', kafka: { auth: 'tls' }, redis: { url: 'rediss://r.internal:6379', authSecret: 'shop/redis' } });

    // Assess
    expect(topicsResource(plan!, ids).handlerEnvironment).toEqual({ KAFKA_LANES_BROKERS: brokers });
    expect(plan!.topics.properties['Listener']).toBe('tls');
    expect(plan!.topics.definition.environment).toEqual({ KAFKA_LANES_GROUP: 'g', KAFKA_LANES_KAFKA_SSL: 'true' });
    expect(plan!.topics.provider).toMatchObject({ key: 'ordersTopics', vpc: false, timeout: 360 });
  });

  it('adds the produce function when asked: in the VPC, the source topic and the trigger group only', () => {
    // Act
    const { plan } = planFunction(service, 'orders', { ...mskFunction(), vpc: { subnetIds: ['subnet-1'] } }, { group: 'g', produce: true });
    const { producer } = groupGrants(plan!, true);

    // Assess
    expect(plan!.producer).toMatchObject({ key: 'ordersProduce', definition: { name: 'shop-dev-orders-produce', vpc: { subnetIds: ['subnet-1'] } } });
    expect(plan!.producer!.definition.environment).toMatchObject({ KAFKA_LANES_PRODUCE_TOPIC: 'orders', KAFKA_LANES_GROUP: 'g', KAFKA_LANES_MSK_CLUSTER_ARN: ARN });
    expect(producer).toEqual([
      { Effect: 'Allow', Action: ['kafka-cluster:Connect', 'kafka-cluster:WriteDataIdempotently'], Resource: ARN },
      { Effect: 'Allow', Action: ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], Resource: [topicArn('orders')] },
      { Effect: 'Allow', Action: ['kafka-cluster:DescribeGroup'], Resource: 'arn:aws:kafka:eu-west-1:123456789012:group/shop/abcd-1/g' },
      expect.objectContaining({ Action: expect.arrayContaining(['ec2:CreateNetworkInterface']), Resource: '*' }),
    ]);
    expect(planFunction(service, 'orders', mskFunction(), { group: 'g' }).plan!.producer).toBeUndefined();
  });

  it('changes no environment when the brokers are configured', () => {
    const { plan } = planFunction(service, 'orders', mskFunction(), { group: 'g', kafka: { brokers: ['b-1.shop:9098'] } });
    const parts = topicsResource(plan!, ids);
    expect(parts).toMatchObject({ handlerEnvironment: {}, removed: [] });
    expect(parts.committerEnvironment['KAFKA_LANES_BROKERS']).toBe('b-1.shop:9098');
    expect(groupGrants(plan!, false).topicsProvider.flatMap((s) => s.Action)).not.toContain('kafka:GetBootstrapBrokers');
    expect(plan!.topics.properties).toMatchObject({ Brokers: 'b-1.shop:9098' });
  });
});

describe('nameTheService', () => {
  const planned = planFunction(service, 'orders', mskFunction(), { group: 'g', produce: true }).plan!;
  const functionsOf = (orders: FunctionView = {}): Record<string, FunctionView> => ({
    orders,
    ordersCommitter: {},
    ordersTopics: {},
    ordersTopicsVpc: {},
    ordersProduce: {},
    other: {},
  });
  const names = (functions: Record<string, FunctionView>): Record<string, unknown> =>
    Object.fromEntries(Object.entries(functions).map(([key, fn]) => [key, fn.environment?.['POWERTOOLS_SERVICE_NAME']]));

  it("gives every function of the group the service's name, and none of the service's other functions", () => {
    // Prepare
    const functions = functionsOf({ environment: { DEMO: '1' } });

    // Act
    nameTheService({ service: 'shop', provider: {}, functions }, [planned]);

    // Assess
    expect([planned.committer?.key, planned.topics.key, planned.topics.provider.key, planned.producer?.key]).toEqual(['ordersCommitter', 'ordersTopicsVpc', 'ordersTopics', 'ordersProduce']);
    expect(names(functions)).toEqual({ orders: 'shop', ordersCommitter: 'shop', ordersTopics: 'shop', ordersTopicsVpc: 'shop', ordersProduce: 'shop', other: undefined });
    expect(functions['orders']!.environment).toEqual({ DEMO: '1', POWERTOOLS_SERVICE_NAME: 'shop' });
  });

  it("keeps the name the service gives, for a function or for all of them", () => {
    // Prepare
    const own = functionsOf({ environment: { POWERTOOLS_SERVICE_NAME: 'orders-api' } });
    const provided = functionsOf();

    // Act
    nameTheService({ service: 'shop', provider: {}, functions: own }, [planned]);
    nameTheService({ service: 'shop', provider: { environment: { POWERTOOLS_SERVICE_NAME: 'shop-team' } }, functions: provided }, [planned]);

    // Assess
    expect(names(own)).toMatchObject({ orders: 'orders-api', ordersCommitter: 'shop' });
    // The provider's value reaches every function (the framework merges it in); none is set over it.
    expect(Object.values(names(provided)).every((name) => name === undefined)).toBe(true);
  });
});
