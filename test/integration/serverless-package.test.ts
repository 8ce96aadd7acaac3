/**
 * `serverless package` with the kafka-lanes plugin, offline and without AWS credentials: the CloudFormation
 * it generates (event source mappings, the committer and its schedule, IAM, environment) and the
 * configuration it refuses. Runs the real framework (osls) on the example service and on small services
 * written for one case each.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { withCheckoutLock } from './support/checkout-lock';
import { ofType, ROOT, serverless, service, serviceYml, template } from './support/serverless';
import { rolePolicyLength, ROLE_POLICY_LIMIT } from '../../src/serverless/iam';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';

// Each `serverless package` takes seconds, a minute on a loaded machine, and one of the checkout's root waits for
// another file's (support/checkout-lock.ts): more than the suite's default two minutes for a test.
jest.setTimeout(600_000);

/** An ES module of a bundle and the chunks it imports, statically or at first use (`import("./chunk")`), transitively. */
function reachable(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/(?:^|[;\s}])import\s*(?:[\w{}\s,*$]+from\s*)?["'](\.{1,2}\/[^"']+)["']/g),
    ...text.matchAll(/import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g),
  ].map((match) => join(dirname(file), match[1]!));
  return [file, ...specifiers.flatMap((imported) => reachable(imported, seen))];
}

function yml(fn: string, mode: 'warn' | 'error' = 'warn'): string {
  return serviceYml(`  orders:\n    handler: handler.handler\n${fn}`, mode);
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('serverless package with kafka-lanes/serverless', () => {
  it('packages the example service offline: the retry function and its triggers, consumer groups, committer, schedule, IAM, environment, bundles', async () => {
    // Prepare
    mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
    const out = mkdtempSync(join(ROOT, '.sls-tmp', 'example-'));
    dirs.push(out);

    // Act: the bundles read while this file holds dist-lambda/ (another file's package of the root rewrites it).
    const { code, output, bundles } = await withCheckoutLock('dist-lambda', async () => {
      const packaged = await serverless(ROOT, ['package', '--package', out]);
      const read = (bundle: string): string => reachable(join(ROOT, 'dist-lambda', bundle)).map((file) => readFileSync(file, 'utf8')).join('\n');
      return { ...packaged, bundles: packaged.code === 0 ? ['functions/orders.mjs', 'kafka-lanes/committer.mjs'].map(read) : [] };
    });

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    const resources = template(out);
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping').map((m) => m.Properties);
    expect(mappings.map((m) => [m['Topics'], (m['AmazonManagedKafkaEventSourceConfig'] as { ConsumerGroupId: string }).ConsumerGroupId, m['StartingPosition'], m['BatchSize']])).toEqual([
      // A group of the stage's own: two stages never share a consumer group, retry topics or Redis keys.
      [['orders'], 'orders-svc-dev', 'TRIM_HORIZON', 500],
      [['orders-svc-dev.retry.1s'], 'orders-svc-dev.retry.1s', 'TRIM_HORIZON', 500],
      [['orders-svc-dev.retry.5s'], 'orders-svc-dev.retry.5s', 'TRIM_HORIZON', 500],
      [['orders-svc-dev.retry.30s'], 'orders-svc-dev.retry.30s', 'TRIM_HORIZON', 500],
    ]);
    // The source's trigger invokes the handler; each retry tier's the retry function, a durable function, through its
    // alias (Lambda invokes a durable function by a qualified ARN only).
    expect(mappings.map((m) => m['FunctionName'])).toEqual([
      { 'Fn::GetAtt': ['OrdersLambdaFunction', 'Arn'] },
      ...[1, 2, 3].map(() => ({ 'Fn::Join': [':', [{ 'Fn::GetAtt': ['OrdersRetryLambdaFunction', 'Arn'] }, 'durable']] })),
    ]);
    for (const mapping of mappings) {
      // The stack's own cluster.
      expect(mapping['EventSourceArn']).toEqual({ Ref: 'KafkaLanesMsk' });
      // On demand: no partial batch response; the handler is told so and fails the invocation instead.
      expect(mapping['FunctionResponseTypes']).toBeUndefined();
    }

    const functions = Object.fromEntries(ofType(resources, 'AWS::Lambda::Function').map((f) => [f.Properties['FunctionName'], f.Properties]));
    const orders = functions['kafka-lanes-example-dev-orders']!;
    expect(orders['Runtime']).toBe('nodejs22.x');
    expect(orders['Handler']).toBe('dist-lambda/functions/orders.handler');
    // The retry function: the handler's code and settings as a durable function, 15 minutes of execution at most.
    const retry = functions['kafka-lanes-example-dev-orders-retry']!;
    expect(retry).toMatchObject({ Runtime: 'nodejs22.x', Handler: orders['Handler'], MemorySize: orders['MemorySize'], Timeout: orders['Timeout'], VpcConfig: orders['VpcConfig'] });
    expect(retry['DurableConfig']).toEqual({ ExecutionTimeout: 900, RetentionPeriodInDays: 7 });
    expect(resources['OrdersRetryDurableLambdaAlias']).toMatchObject({ Type: 'AWS::Lambda::Alias', Properties: { Name: 'durable', FunctionName: { Ref: 'OrdersRetryLambdaFunction' } } });
    const variables = (fn: Record<string, unknown>): Record<string, unknown> => (fn['Environment'] as { Variables: Record<string, unknown> }).Variables;
    expect(variables(orders)).toMatchObject({
      KAFKA_LANES_GROUP: 'orders-svc-dev',
      KAFKA_LANES_RETRY_TIERS: '1s,5s,30s',
      KAFKA_LANES_DEAD_LETTER_POLICY: 'release',
      KAFKA_LANES_ORDERING: 'key',
      KAFKA_LANES_PARTIAL_BATCH_RESPONSE: 'false',
      // The stack's ElastiCache and MSK cluster, the brokers derived from the cluster, over MSK IAM.
      KAFKA_LANES_REDIS_CLUSTER_NODES: { 'Fn::Sub': '${KafkaLanesRedis.ConfigurationEndPoint.Address}:${KafkaLanesRedis.ConfigurationEndPoint.Port}' },
      KAFKA_LANES_REDIS_TLS: 'true',
      KAFKA_LANES_SASL_MECHANISM: 'aws-iam',
      // Where the AUTH token is kept, not the token: the functions read it at cold start.
      KAFKA_LANES_REDIS_AUTH_SECRET: { Ref: 'KafkaLanesRedisAuthSecret' },
    });
    expect(variables(orders)['KAFKA_LANES_REDIS_AUTH_TOKEN']).toBeUndefined();
    expect(JSON.stringify(variables(orders))).not.toContain('resolve:');
    expect(JSON.stringify(resources)).not.toMatch(/127\.0\.0\.1|localhost/);
    const committer = functions['kafka-lanes-example-dev-orders-committer']!;
    expect(committer['Handler']).toBe('dist-lambda/kafka-lanes/committer.handler');
    expect(committer['Runtime']).toBe('nodejs22.x');
    // No function asks MSK for the brokers at run time, and all take them from one source: the topics resource's
    // answer (its provider asked MSK at deploy time), not the events (AWS does not say which listener they name).
    expect(variables(orders)['KAFKA_LANES_MSK_CLUSTER_ARN']).toBeUndefined();
    expect(variables(orders)['KAFKA_LANES_BROKERS']).toEqual({ 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] });
    expect(variables(committer)['KAFKA_LANES_BROKERS']).toEqual({ 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] });
    // One resolution of the group's settings: the committer gets exactly the handler's.
    const groupSettings = (fn: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(Object.entries(variables(fn)).filter(([name]) => name.startsWith('KAFKA_LANES_')));
    expect(groupSettings(committer)).toEqual(groupSettings(orders));
    expect(groupSettings(retry)).toEqual({ ...groupSettings(orders), KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '900' });
    // Every function of the group logs as the user's service (ctx.logger's `service`), not as kafka-lanes.
    expect(Object.fromEntries(Object.entries(functions).map(([name, fn]) => [name, variables(fn as Record<string, unknown>)['POWERTOOLS_SERVICE_NAME']]))).toEqual({
      'kafka-lanes-example-dev-orders': 'kafka-lanes-example',
      'kafka-lanes-example-dev-orders-retry': 'kafka-lanes-example',
      'kafka-lanes-example-dev-orders-committer': 'kafka-lanes-example',
      'kafka-lanes-example-dev-orders-topics': 'kafka-lanes-example',
      'kafka-lanes-example-dev-orders-topicsvpc': 'kafka-lanes-example',
      'kafka-lanes-example-dev-orders-produce': 'kafka-lanes-example',
    });
    // The topics resource, served by a provider outside the VPC, with the cluster among its properties.
    expect(resources['OrdersKafkaLanesTopics']).toEqual({
      Type: 'Custom::KafkaLanesTopics',
      Properties: {
        ServiceToken: { 'Fn::GetAtt': ['OrdersTopicsLambdaFunction', 'Arn'] },
        ServiceTimeout: '420',
        Group: 'orders-svc-dev',
        Tiers: ['1s', '5s', '30s'],
        Source: 'orders',
        DeleteOnRemove: 'false',
        Version: expect.any(String),
        // The example declares its source's partitions: the resource creates the source too.
        SourcePartitions: '6',
        Cluster: { Ref: 'KafkaLanesMsk' },
        Listener: 'iam',
      },
    });
    const provider = functions['kafka-lanes-example-dev-orders-topics']!;
    expect(provider['Handler']).toBe('dist-lambda/kafka-lanes/topics-provider.handler');
    expect(provider['VpcConfig']).toBeUndefined();
    expect(variables(provider)['KAFKA_LANES_TOPICS_WORKER']).toEqual({ Ref: 'OrdersTopicsVpcLambdaFunction' });
    // Its worker in the VPC, with the Kafka auth only: no Redis (it neither waits for ElastiCache nor changes with it).
    const topicsFunction = functions['kafka-lanes-example-dev-orders-topicsvpc']!;
    expect(topicsFunction['Handler']).toBe('dist-lambda/kafka-lanes/topics.handler');
    expect(topicsFunction['Timeout']).toBe(300);
    expect(provider['Timeout']).toBe(360);
    expect(groupSettings(topicsFunction)).toEqual({ KAFKA_LANES_GROUP: 'orders-svc-dev', KAFKA_LANES_SASL_MECHANISM: 'aws-iam' });
    // The triggers are made once the topics are.
    for (const mapping of ofType(resources, 'AWS::Lambda::EventSourceMapping')) expect(mapping.DependsOn).toEqual(expect.arrayContaining(['OrdersKafkaLanesTopics']));
    // Both functions in the private subnets, with the functions' security group.
    for (const fn of [orders, retry, committer, topicsFunction]) {
      expect(fn['VpcConfig']).toMatchObject({ SecurityGroupIds: [{ Ref: 'KafkaLanesFunctionSecurityGroup' }] });
    }
    const [rule] = ofType(resources, 'AWS::Events::Rule');
    expect(rule?.Properties).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect(JSON.stringify(rule?.Properties['Targets'])).toContain('OrdersCommitterLambdaFunction');

    // A role per function, least privilege: no `kafka-cluster:*`, no Kafka grant on "*" (only EC2's network
    // interface actions, which have no resource-level form); the handler's and the committer's differ.
    expect(orders['Role']).toEqual({ 'Fn::GetAtt': ['OrdersKafkaLanesRole', 'Arn'] });
    expect(committer['Role']).toEqual({ 'Fn::GetAtt': ['OrdersCommitterKafkaLanesRole', 'Arn'] });
    expect(retry['Role']).toEqual({ 'Fn::GetAtt': ['OrdersRetryKafkaLanesRole', 'Arn'] });
    expect(resources['IamRoleLambdaExecution']).toBeUndefined();
    const statementsOf = (role: string): Array<{ Action: string[]; Resource: unknown }> =>
      (resources[role]!.Properties['Policies'] as Array<{ PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } }>)[0]!.PolicyDocument.Statement;
    const handlerActions = statementsOf('OrdersKafkaLanesRole').flatMap((statement) => statement.Action);
    const committerActions = statementsOf('OrdersCommitterKafkaLanesRole').flatMap((statement) => statement.Action);
    expect(handlerActions).toEqual(expect.arrayContaining(['kafka-cluster:ReadData', 'kafka-cluster:WriteData', 'kafka-cluster:WriteDataIdempotently', 'kafka:GetBootstrapBrokers', 'ec2:CreateNetworkInterface']));
    expect(committerActions).toEqual(expect.arrayContaining(['kafka-cluster:AlterGroup', 'kafka-cluster:WriteData']));
    expect(committerActions).not.toContain('kafka:GetBootstrapBrokers');
    // The topics worker: creates and checks topics; never reads, writes or deletes, and calls no AWS API. Its provider
    // asks MSK for the brokers, invokes it and reads its stack's status.
    const topicsActions = statementsOf('OrdersTopicsVpcKafkaLanesRole').flatMap((statement) => statement.Action);
    expect(topicsActions).toEqual(expect.arrayContaining(['kafka-cluster:Connect', 'kafka-cluster:CreateTopic', 'kafka-cluster:DescribeTopic', 'kafka-cluster:DescribeTopicDynamicConfiguration']));
    expect(topicsActions).not.toContain('kafka:GetBootstrapBrokers');
    expect(statementsOf('OrdersTopicsKafkaLanesRole').flatMap((statement) => statement.Action).sort()).toEqual(
      ['cloudformation:DescribeStacks', 'kafka:GetBootstrapBrokers', 'lambda:InvokeFunction', 'logs:CreateLogStream', 'logs:PutLogEvents'],
    );
    for (const action of ['kafka-cluster:ReadData', 'kafka-cluster:WriteData', 'kafka-cluster:DeleteTopic', 'kafka-cluster:AlterGroup']) expect(topicsActions).not.toContain(action);
    expect(committerActions).not.toContain('ec2:DescribeVpcs');
    // The retry function reads the retry tiers (the handler no longer does) and checkpoints its own durable executions.
    const retryStatements = statementsOf('OrdersRetryKafkaLanesRole');
    expect(retryStatements.flatMap((statement) => statement.Action)).toEqual(expect.arrayContaining(['kafka-cluster:ReadData', 'kafka-cluster:WriteData', 'lambda:CheckpointDurableExecution', 'lambda:GetDurableExecutionState']));
    expect(JSON.stringify(statementsOf('OrdersKafkaLanesRole'))).not.toContain('.retry.1s');
    expect(retryStatements.find((statement) => statement.Action.includes('lambda:CheckpointDurableExecution'))?.Resource).toEqual({
      'Fn::Sub': 'arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:kafka-lanes-example-dev-orders-retry:*',
    });
    // Each reads the AUTH token's secret, and only it.
    for (const role of ['OrdersKafkaLanesRole', 'OrdersRetryKafkaLanesRole', 'OrdersCommitterKafkaLanesRole']) {
      expect(statementsOf(role).filter((statement) => statement.Action.includes('secretsmanager:GetSecretValue'))).toEqual([
        { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: { Ref: 'KafkaLanesRedisAuthSecret' } },
      ]);
    }
    for (const statement of [...statementsOf('OrdersKafkaLanesRole'), ...retryStatements, ...statementsOf('OrdersCommitterKafkaLanesRole'), ...statementsOf('OrdersTopicsVpcKafkaLanesRole')]) {
      expect(statement.Action).not.toContain('kafka-cluster:*');
      if (statement.Resource === '*') expect(statement.Action.filter((action) => !action.startsWith('ec2:'))).toEqual([]);
    }
    for (const type of ['AWS::MSK::ServerlessCluster', 'AWS::ElastiCache::ReplicationGroup', 'AWS::EC2::VPC']) expect(ofType(resources, type)).toHaveLength(1);
    const logGroups = ofType(resources, 'AWS::Logs::LogGroup');
    // Handler, retry function, committer, topics provider and worker, produce function.
    expect(logGroups.map((group) => group.Properties['RetentionInDays'])).toEqual([30, 30, 30, 30, 30, 30]);

    const zip = readFileSync(join(out, 'kafka-lanes-example.zip')).toString('latin1');
    // ES modules with splitting: each handler's file and the chunks, read when a handler first imports them.
    const files = ['dist-lambda/functions/orders.mjs', 'dist-lambda/kafka-lanes/committer.mjs', 'dist-lambda/kafka-lanes/topics.mjs', 'dist-lambda/chunks/', 'node_modules/'];
    expect(files.map((file) => [file, zip.includes(file)])).toEqual([
      ['dist-lambda/functions/orders.mjs', true],
      ['dist-lambda/kafka-lanes/committer.mjs', true],
      ['dist-lambda/kafka-lanes/topics.mjs', true],
      ['dist-lambda/chunks/', true],
      ['node_modules/', false],
    ]);
    // The Lua scripts travel inside the bundle: in what each handler's file imports, at load or at first use.
    expect(bundles).toHaveLength(2);
    for (const text of bundles) expect(text).toContain("redis.call('SETBIT'");
  });

  it('reports batch item failures on every trigger of a provisioned-mode function, and tells the handler', async () => {
    // Prepare
    const dir = service(
      yml(`    events:
      - msk: { arn: '${ARN}', topic: orders, batchSize: 100, provisionedPollerConfig: { minimumPollers: 1 } }
    kafkaLanes: { group: shop-orders, retryTiers: [5s] }`),
    );
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    const resources = template(join(dir, '.serverless'));
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping').map((m) => m.Properties);
    expect(mappings).toHaveLength(2);
    for (const mapping of mappings) {
      expect(mapping['FunctionResponseTypes']).toEqual(['ReportBatchItemFailures']);
      expect(mapping['ProvisionedPollerConfig']).toEqual({ MinimumPollers: 1 });
    }
    const fn = ofType(resources, 'AWS::Lambda::Function').find((f) => f.Properties['FunctionName'] === 'shop-dev-orders')!;
    expect((fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables['KAFKA_LANES_PARTIAL_BATCH_RESPONSE']).toBe('true');
  });

  it("passes the source trigger's schema registry through (provisioned mode), grants the Glue registry's reads, tells the handler, and refuses it on demand", async () => {
    // Prepare
    const registry = 'arn:aws:glue:eu-west-1:123456789012:registry/shop';
    const dir = service(
      yml(`    events:
      - msk: { arn: '${ARN}', topic: orders, provisionedPollerConfig: { minimumPollers: 1 } }
    kafkaLanes: { group: shop-orders, retryTiers: [5s], schemaRegistry: { schemaRegistryUri: '${registry}', schemaValidationConfigs: [{ attribute: KEY }, { attribute: VALUE }] } }`),
    );
    const onDemand = service(
      yml(`    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes: { group: shop-orders, schemaRegistry: { schemaRegistryUri: '${registry}' } }`),
    );
    dirs.push(dir, onDemand);

    // Act
    const packaged = await serverless(dir, ['package']);
    const refused = await serverless(onDemand, ['package']);

    // Assess
    expect({ code: packaged.code }).toEqual({ code: 0 });
    const resources = template(join(dir, '.serverless'));
    const mappings = ofType(resources, 'AWS::Lambda::EventSourceMapping').map((m) => m.Properties);
    const source = mappings.find((m) => (m['Topics'] as string[])[0] === 'orders')!;
    const retry = mappings.find((m) => (m['Topics'] as string[])[0] === 'shop-orders.retry.5s')!;
    expect(source['AmazonManagedKafkaEventSourceConfig']).toEqual({
      ConsumerGroupId: 'shop-orders',
      SchemaRegistryConfig: { SchemaRegistryURI: registry, EventRecordFormat: 'SOURCE', SchemaValidationConfigs: [{ Attribute: 'KEY' }, { Attribute: 'VALUE' }] },
    });
    expect(retry['AmazonManagedKafkaEventSourceConfig']).toEqual({ ConsumerGroupId: 'shop-orders.retry.5s' });
    const role = JSON.stringify(ofType(resources, 'AWS::IAM::Role').find((r) => JSON.stringify(r).includes('glue:'))!.Properties);
    expect(role).toContain('"Action":["glue:GetRegistry"],"Resource":"arn:aws:glue:eu-west-1:123456789012:registry/shop"');
    expect(role).toContain('"Action":["glue:GetSchemaVersion"],"Resource":["arn:aws:glue:eu-west-1:123456789012:registry/shop","arn:aws:glue:eu-west-1:123456789012:schema/shop/*"]');
    const fn = ofType(resources, 'AWS::Lambda::Function').find((f) => f.Properties['FunctionName'] === 'shop-dev-orders')!;
    expect((fn.Properties['Environment'] as { Variables: Record<string, string> }).Variables['KAFKA_LANES_EVENT_RECORD_FORMAT']).toBe('SOURCE');
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('functions.orders.kafkaLanes.schemaRegistry: expected a trigger in provisioned mode');
  });

  it("names the service in every function's logs, and keeps the name the service gives itself", async () => {
    // Prepare: a service name for all functions, another for the handler alone.
    const dir = service(
      yml(`    environment: { POWERTOOLS_SERVICE_NAME: orders-api }
    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes: { group: shop-orders, retryTiers: [5s] }`).replace('  region: eu-west-1', '  region: eu-west-1\n  environment: { POWERTOOLS_SERVICE_NAME: shop-team }'),
    );
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect({ code, output }).toMatchObject({ code: 0 });
    const services = Object.fromEntries(
      ofType(template(join(dir, '.serverless')), 'AWS::Lambda::Function').map((f) => [
        f.Properties['FunctionName'],
        (f.Properties['Environment'] as { Variables: Record<string, unknown> }).Variables['POWERTOOLS_SERVICE_NAME'],
      ]),
    );
    expect(services).toEqual({
      'shop-dev-orders': 'orders-api',
      // The handler's code, with the handler's environment.
      'shop-dev-orders-retry': 'orders-api',
      'shop-dev-orders-committer': 'shop-team',
      'shop-dev-orders-topics': 'shop-team',
      'shop-dev-orders-topicsvpc': 'shop-team',
    });
  });

  it('packages SCRAM producers and a Redis AUTH secret: references in both functions, reads of exactly those secrets, no secret value', async () => {
    // Prepare
    const secret = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_shop-AbCdEf';
    const dir = service(
      yml(`    events:
      - msk: { arn: '${ARN}', topic: orders, saslScram512: '${secret}' }
    kafkaLanes: { group: shop-orders, retryTiers: [5s], redis: { url: 'rediss://redis.internal:6379', authSecret: 'ssm:/shop/redis-token' } }`, 'error'),
    );
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });
    const resources = template(join(dir, '.serverless'));
    const functions = Object.fromEntries(ofType(resources, 'AWS::Lambda::Function').map((f) => [f.Properties['FunctionName'], f.Properties]));
    const variables = (name: string): Record<string, unknown> => (functions[name]!['Environment'] as { Variables: Record<string, unknown> }).Variables;
    const expected = {
      KAFKA_LANES_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_LANES_SASL_SECRET: secret,
      KAFKA_LANES_KAFKA_SSL: 'true',
      KAFKA_LANES_REDIS_AUTH_SECRET: 'ssm:/shop/redis-token',
    };
    expect(variables('shop-dev-orders')).toMatchObject(expected);
    expect(variables('shop-dev-orders-committer')).toMatchObject({ ...expected, KAFKA_LANES_BROKERS: { 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] } });
    // The brokers of the SCRAM listener, as the committer's: one source.
    expect(variables('shop-dev-orders')['KAFKA_LANES_BROKERS']).toEqual({ 'Fn::GetAtt': ['OrdersKafkaLanesTopics', 'BootstrapBrokers'] });
    // The topics worker gets the SCRAM secret and not the Redis token; its provider asks MSK for the SCRAM listener.
    expect(variables('shop-dev-orders-topicsvpc')).toEqual({ KAFKA_LANES_GROUP: expect.any(String), KAFKA_LANES_SASL_MECHANISM: 'scram-sha-512', KAFKA_LANES_SASL_SECRET: secret, KAFKA_LANES_KAFKA_SSL: 'true', POWERTOOLS_SERVICE_NAME: 'shop' });
    expect(resources['OrdersKafkaLanesTopics']!.Properties).toMatchObject({ Cluster: ARN, Listener: 'scram' });
    const statementsOf = (role: string): Array<{ Action: string[]; Resource: unknown }> =>
      (resources[role]!.Properties['Policies'] as Array<{ PolicyDocument: { Statement: Array<{ Action: string[]; Resource: unknown }> } }>)[0]!.PolicyDocument.Statement;
    expect(statementsOf('OrdersTopicsVpcKafkaLanesRole').filter((statement) => statement.Action.includes('ssm:GetParameter'))).toEqual([]);
    for (const role of ['OrdersKafkaLanesRole', 'OrdersCommitterKafkaLanesRole']) {
      const reads = statementsOf(role).filter((statement) => statement.Action.some((action) => action === 'secretsmanager:GetSecretValue' || action === 'ssm:GetParameter'));
      expect(reads).toEqual(
        expect.arrayContaining([
          { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: secret },
          { Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/shop/redis-token' } },
        ]),
      );
    }
    // No credential in either function's configuration: no username, password or token variable.
    for (const name of ['shop-dev-orders', 'shop-dev-orders-committer']) {
      expect(Object.keys(variables(name)).filter((variable) => /USERNAME|PASSWORD|TOKEN/.test(variable))).toEqual([]);
    }
  });

  it.each([
    ['an unknown key (the framework schema, error mode)', 'error', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTier: [5s] }`, /retryTier/],
    ['an unknown key (the plugin, warn mode)', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTier: [5s] }`, /functions\.orders\.kafkaLanes: unknown key `retryTier`/],
    ['a wrong value', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retryTiers: [5 seconds] }`, /functions\.orders\.kafkaLanes\.retryTiers\.0: a duration/],
    ['a timeout over 14 minutes', 'warn', `    timeout: 900\n    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: {}`, /functions\.orders\.timeout: expected at most 840 seconds/],
    ['a batch size over 10,000', 'warn', `    events: [{ msk: { arn: '${ARN}', topic: orders, batchSize: 20000 } }]\n    kafkaLanes: {}`, /batchSize: expected an integer from 1 to 10,000, got 20000/],
    [
      'a runtime Lambda durable functions do not run (the retry function is one)',
      'warn',
      `    runtime: nodejs20.x\n    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: {}`,
      /functions\.orders\.runtime \(the runtime of the retry function kafka-lanes adds, a Lambda durable function\): expected one of nodejs22\.x, nodejs24\.x, got nodejs20\.x/,
    ],
    [
      'a retry execution longer than an event source mapping waits',
      'warn',
      `    events: [{ msk: { arn: '${ARN}', topic: orders } }]\n    kafkaLanes: { retry: { executionTimeout: 3600 } }`,
      /functions\.orders\.kafkaLanes\.retry\.executionTimeout: at most 900 seconds/,
    ],
  ])('fails on %s, naming it', async (_what, mode, fn, message) => {
    // Prepare
    const dir = service(yml(fn, mode as 'warn' | 'error'));
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect(code).not.toBe(0);
    expect(output).toMatch(message);
  });
  it('refuses, under configValidationMode: error, what AWS or every cold start would refuse, naming the setting, the limit and the value', async () => {
    // Prepare: one function per refused setting; the plugin reports every problem of a service at once.
    const long = 'g'.repeat(195);
    const msk = (topic: string, extra = ''): string => `    events: [{ msk: { arn: '${ARN}', topic: ${topic}${extra} } }]\n`;
    const fns = [
      ['tiers', `${msk('a')}    kafkaLanes: { retryTiers: [30s, 5s] }`],
      ['repeated', `${msk('b')}    kafkaLanes: { retryTiers: [60s, 1m] }`],
      ['both', `${msk('c')}    kafkaLanes: { redis: { url: 'redis://r.internal:6379', clusterNodes: ['r.internal:6379'] } }`],
      ['rate', `${msk('d')}    kafkaLanes: { committer: { schedule: 'rate(1 minutes)' } }`],
      ['cron', `${msk('e')}    kafkaLanes: { committer: { schedule: 'cron(bad)' } }`],
      ['loopback', `${msk('f')}    kafkaLanes: { redis: { url: 'redis://127.0.0.1:6379' }, kafka: { brokers: ['localhost:9092'] } }`],
      ['retrygroup', `${msk('h')}    kafkaLanes: { group: ${long} }`],
      ['ids', `${msk('i')}    kafkaLanes: { group: ${'a'.repeat(80)}, retryTiers: [5s, 1m] }`],
      ['region', `    events: [{ msk: { arn: 'arn:aws:kafka:us-east-1:123456789012:cluster/shop/abcd-1', topic: j } }]\n    kafkaLanes: {}`],
      ['longcommittername', `    name: ${'n'.repeat(60)}\n${msk('k')}    kafkaLanes: {}`],
      ['scram', `${msk('l')}    kafkaLanes: { kafka: { auth: scram } }`],
      ['plaintoken', `    environment: { KAFKA_LANES_REDIS_AUTH_TOKEN: t0ken }\n${msk('m')}    kafkaLanes: { redis: { url: 'rediss://r.internal:6379', authSecret: 'ssm:/shop/token' } }`],
      // Any variable of any function, the framework's or not.
      ['recorder', `    environment: { DEMO_RESULTS_REDIS_URL: 'redis://127.0.0.1:6379', DEMO_LATENCY_MS: '20' }`],
    ];
    const yml = serviceYml(`${fns.map(([key, body]) => `  ${key}:\n    handler: handler.handler\n${body}`).join('\n')}\n`);
    const dir = service(yml.replace('  region: eu-west-1\n', "  region: eu-west-1\n  environment: { PAYMENTS_URL: 'http://localhost:8080/charge' }\n"));
    dirs.push(dir);

    // Act
    const { code, output } = await serverless(dir, ['package']);

    // Assess
    expect(code).not.toBe(0);
    const expected = [
      'functions.tiers.kafkaLanes.retryTiers.1: expected a longer delay than the tier before it, `30s` (tiers ascend strictly), got `5s`',
      'functions.repeated.kafkaLanes.retryTiers.1: expected a longer delay than the tier before it, `60s` (tiers ascend strictly), got `1m`',
      'functions.both.kafkaLanes.redis: expected `url` (one server) or `clusterNodes` (a cluster), got both',
      'functions.rate.kafkaLanes.committer.schedule: expected `rate(1 minute)` (a value of 1 takes the singular unit), got `rate(1 minutes)`',
      'functions.cron.kafkaLanes.committer.schedule: expected `cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)`, six fields, got `cron(bad)`',
      'functions.loopback.kafkaLanes.redis.url: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address)',
      'functions.loopback.kafkaLanes.kafka.brokers.0: expected an address a deployed function can reach, got `localhost:9092` (a loopback address)',
      `functions.retrygroup.kafkaLanes.group (the consumer group of retry tier \`10m\`, \`<group>.retry.10m\`): expected at most 200 characters (event source mapping consumer group ids), got 205`,
      'functions.retrygroupCommitter.description (from the group `kafkaLanes.group`): expected at most 256 characters (Lambda descriptions), got',
      "functions.ids.kafkaLanes.group: expected a group short enough for the triggers' CloudFormation logical IDs to differ",
      "functions.region.events.msk.arn: expected an MSK cluster in the service's region `eu-west-1` (an event source mapping reads only its own region), got `arn:aws:kafka:us-east-1:",
      'functions.longcommitternameCommitter.name (the committer kafka-lanes adds, `<function name>-committer`): expected at most 64 characters (Lambda function names), got 70',
      'functions.scram.kafkaLanes.kafka.secret: expected the Secrets Manager secret holding the SCRAM username and password of the producers and the committer (`kafka.auth: scram`; the trigger has no `saslScram512` to take it from), got none',
      'functions.plaintoken.environment.KAFKA_LANES_REDIS_AUTH_TOKEN: expected no plain value beside `kafkaLanes.redis.authSecret` (the functions read it from there), got one',
      'provider.environment.PAYMENTS_URL: expected an address a deployed function can reach, got `http://localhost:8080/charge` (a loopback address)',
      'functions.recorder.environment.DEMO_RESULTS_REDIS_URL: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address)',
    ];
    expect(expected.filter((message) => !output.includes(message))).toEqual([]);
  });

  it('keeps maximumBatchingWindow: 0 on every trigger it is given to (the framework drops a 0, and AWS would batch for 500 ms)', async () => {
    // Prepare
    const dir = service(
      serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders, maximumBatchingWindow: 0 }
    kafkaLanes: { group: shop-orders, retryTiers: [5s, 1m], redis: { url: 'rediss://redis.internal:6379' } }
  payouts:
    handler: handler.handler
    events:
      - kafka: { topic: payouts, maximumBatchingWindow: 0, bootstrapServers: [b-1.kafka.internal:9094], accessConfigurations: { vpcSubnet: [subnet-0123456789abcdef0], vpcSecurityGroup: [sg-0123456789abcdef0] } }
  refunds:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: refunds, maximumBatchingWindow: 2 }`),
    );
    dirs.push(dir);

    // Act
    const packaged = await serverless(dir, ['package']);

    // Assess: the source and both retry tiers of orders, the plain kafka trigger; 2 s stays 2 s.
    expect({ code: packaged.code, output: packaged.code === 0 ? '' : packaged.output }).toEqual({ code: 0, output: '' });
    const windows = ofType(template(join(dir, '.serverless')), 'AWS::Lambda::EventSourceMapping').map((mapping) => [
      (mapping.Properties['Topics'] as string[])[0],
      mapping.Properties['MaximumBatchingWindowInSeconds'],
    ]);
    expect(windows.sort()).toEqual([
      ['orders', 0],
      ['payouts', 0],
      ['refunds', 2],
      ['shop-orders.retry.1m', 0],
      ['shop-orders.retry.5s', 0],
    ]);
  });

  it('keeps every role under IAM\'s policy size quota: 20 retry tiers of a 64-character group under one wildcard, and refuses what no wildcard fits', async () => {
    // Prepare: the largest a group's grants get (an imported ARN counts at its longest), and a service beyond any.
    const group = 'g'.repeat(64);
    const tiers = Array.from({ length: 20 }, (_unused, index) => `${index + 1}m`);
    const many = (prefix: string): string => `[${Array.from({ length: 50 }, (_unused, index) => `${prefix}-${String(index).padStart(2, '0')}-${'o'.repeat(200)}`).join(', ')}]`;
    const fits = service(
      serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: { 'Fn::ImportValue': shop-kafka-arn }, topic: orders }
    kafkaLanes: { group: ${group}, retryTiers: [${tiers.join(', ')}], redis: { url: 'rediss://redis.internal:6379', authSecret: shop/redis-auth } }`),
    );
    const beyond = service(
      serviceYml(`  orders:
    handler: handler.handler
    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes: { group: ${group}, outputs: ${many('out')}, redis: { url: 'rediss://redis.internal:6379' } }`),
    );
    dirs.push(fits, beyond);

    // Act
    const [packaged, refused] = await Promise.all([serverless(fits, ['package']), serverless(beyond, ['package'])]);

    // Assess
    expect({ code: packaged.code, output: packaged.code === 0 ? '' : packaged.output }).toEqual({ code: 0, output: '' });
    const roles = ofType(template(join(fits, '.serverless')), 'AWS::IAM::Role');
    // Handler, retry function, committer, topics worker and its provider.
    expect(roles.length).toBe(5);
    for (const role of roles) expect(rolePolicyLength(role)).toBeLessThanOrEqual(ROLE_POLICY_LIMIT);
    const resources = JSON.stringify(roles.map((role) => role.Properties['Policies']));
    expect(resources).toContain(`/${group}.retry.*`);
    expect(resources).not.toContain(`/${group}.retry.20m`);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toMatch(/functions\.orders: expected a role policy of at most 10240 characters \(IAM's quota on a role's inline policies\), got up to [0-9]+ with the retry tiers under one wildcard/);
  });

  it('warns when the example would create MSK Serverless in a region AWS does not offer it in, and not with a provisioned cluster', async () => {
    // Prepare
    mkdirSync(join(ROOT, '.sls-tmp'), { recursive: true });
    const outs = [0, 1].map(() => mkdtempSync(join(ROOT, '.sls-tmp', 'region-')));
    dirs.push(...outs);

    // Act: one after the other (both bundle into the checkout's dist-lambda/).
    const serverlessCluster = await serverless(ROOT, ['package', '--stage', 'prod', '--package', outs[0]!], { AWS_REGION: 'sa-east-1' });
    const provisioned = await serverless(ROOT, ['package', '--stage', 'prod', '--package', outs[1]!, '--param', 'msk=provisioned'], { AWS_REGION: 'sa-east-1' });

    // Assess
    expect([serverlessCluster.code, provisioned.code]).toEqual([0, 0]);
    expect(serverlessCluster.output).toContain("resources.KafkaLanesMsk: MSK Serverless is not offered in `sa-east-1` according to AWS's MSK developer guide");
    expect(provisioned.output).not.toContain('MSK Serverless is not offered');
  });
  it("warns that the example stack's --param createEndpoints changes nothing in a team's own service, and names kafka-lanes produce where invoke local is refused", async () => {
    // Prepare: a team's own service (its own VPC, no infra/aws/network.yml); the same with the local stack's Redis.
    const own = (redis: string): string => {
      const dir = service(yml(`    events:
      - msk: { arn: '${ARN}', topic: orders }
    kafkaLanes: { group: shop-orders, produce: true, redis: { url: '${redis}' } }`));
      dirs.push(dir);
      return dir;
    };

    // Act
    const withParam = await serverless(own('rediss://redis.internal:6379'), ['package', '--param', 'createEndpoints=false']);
    const invoked = await serverless(own('redis://127.0.0.1:6379'), ['invoke', 'local', '--function', 'ordersProduce', '--data', '{"records":[]}']);

    // Assess: the param is named and said to change nothing; invoke local is refused for the loopback Redis, naming the local way.
    expect(withParam.code).toBe(0);
    expect(withParam.output).toContain("--param createEndpoints: a switch of the example stack's network");
    expect(withParam.output).toContain('behind a NAT gateway, nothing to set');
    expect(invoked.code).not.toBe(0);
    expect(invoked.output).toContain('(a loopback address)');
    expect(invoked.output).toContain("npx kafka-lanes produce <topic> --key <key> '<value>'");
  });
});
