import {
  exampleNetworkParamWarning,
  invokeLocalHint,
  clusterRegionProblem, declaredTemplate, endpointProblems, existingVpcProblems, lengthProblem, loopbackEnvironmentProblems, mskServerlessRegionWarning, privateEndpoint,
  scheduleProblem, tierOrderProblems,
  undeclaredSendsWarning, vpcProblems,
} from '../../../src/serverless/checks';

describe('scheduleProblem', () => {
  it.each(['rate(1 minute)', 'rate(5 minutes)', 'rate(1 hour)', 'rate(2 days)', 'cron(0/5 * * * ? *)', 'cron(0 12 ? * MON-FRI *)'])('accepts %s', (expression) => {
    expect(scheduleProblem(expression)).toBeUndefined();
  });

  it.each([
    ['rate(1 minutes)', 'expected `rate(1 minute)` (a value of 1 takes the singular unit), got `rate(1 minutes)`'],
    ['rate(5 minute)', 'expected `rate(5 minutes)` (a value above 1 takes the plural unit), got `rate(5 minute)`'],
    ['rate(0 minutes)', 'expected `rate(<positive integer> <minute(s) | hour(s) | day(s)>)`, got `rate(0 minutes)`'],
    ['rate(5 seconds)', 'expected `rate(<positive integer> <minute(s) | hour(s) | day(s)>)`, got `rate(5 seconds)`'],
    ['cron(bad)', 'expected `cron(<minutes> <hours> <day-of-month> <month> <day-of-week> <year>)`, six fields, got `cron(bad)`'],
    ['cron(0 12 * * * *)', 'expected exactly one of day-of-month and day-of-week to be `?` (EventBridge cron), got `cron(0 12 * * * *)`'],
    ['every minute', 'expected `rate(...)` or `cron(...)`, got `every minute`'],
  ])('refuses %s', (expression, message) => {
    expect(scheduleProblem(expression)).toBe(message);
  });
});

describe('tierOrderProblems', () => {
  it('names every tier not longer than the one before it, and accepts ascending tiers', () => {
    // Act
    const problems = tierOrderProblems('t', ['30s', '5s', '1m', '60s']);

    // Assess
    expect(problems).toEqual([
      't.1: expected a longer delay than the tier before it, `30s` (tiers ascend strictly), got `5s`',
      't.3: expected a longer delay than the tier before it, `1m` (tiers ascend strictly), got `60s`',
    ]);
    expect(tierOrderProblems('t', ['1s', '5s', '30s'])).toEqual([]);
  });
});

describe('endpointProblems', () => {
  it.each([
    ['redis://127.0.0.1:6379', 'a loopback address'],
    ['rediss://localhost:6379', 'a loopback address'],
    ['[::1]:9092', 'a loopback address'],
    ['b-1.example.com:9098', 'a placeholder (reserved example) name'],
    ['kafka.invalid:9092', 'a placeholder (reserved example) name'],
  ])('refuses %s (%s)', (value, kind) => {
    expect(endpointProblems([{ setting: 's', value }])).toEqual([
      `s: expected an address a deployed function can reach, got \`${value}\` (${kind}); the local stack is for \`serverless offline\` (custom.kafkaLanes.offline)`,
    ]);
  });

  it('accepts private names and CloudFormation values', () => {
    expect(
      endpointProblems([
        { setting: 'a', value: 'clustercfg.orders.abc.euw1.cache.amazonaws.com:6379' },
        { setting: 'b', value: 'rediss://10.0.1.5:6379' },
        { setting: 'c', value: { 'Fn::GetAtt': ['KafkaLanesRedis', 'ConfigurationEndPoint.Address'] } },
      ]),
    ).toEqual([]);
  });
});

describe('clusterRegionProblem and lengthProblem', () => {
  it('refuses a cluster of another region, accepts its own and a CloudFormation reference', () => {
    expect(clusterRegionProblem('arn', 'arn:aws:kafka:us-east-1:1:cluster/a/b', 'eu-west-1')).toMatch(/region `us-east-1`/);
    expect(clusterRegionProblem('arn', 'arn:aws:kafka:eu-west-1:1:cluster/a/b', 'eu-west-1')).toBeUndefined();
    expect(clusterRegionProblem('arn', { Ref: 'KafkaLanesMsk' }, 'eu-west-1')).toBeUndefined();
  });

  it('names the limit and the length', () => {
    expect(lengthProblem('name', 'x'.repeat(65), 64, 'Lambda function names')).toBe(`name: expected at most 64 characters (Lambda function names), got 65: \`${'x'.repeat(65)}\``);
    expect(lengthProblem('name', 'x'.repeat(64), 64, 'Lambda function names')).toBeUndefined();
  });
});

describe('loopbackEnvironmentProblems', () => {
  it('names every variable whose value reaches a loopback address: a URL, a host:port list, a bare host', () => {
    // Act
    const problems = loopbackEnvironmentProblems('functions.orders.environment', {
      DEMO_RESULTS_REDIS_URL: 'redis://127.0.0.1:6379',
      PAYMENTS_URL: 'http://localhost:8080/charge',
      PEERS: 'b-1.internal:9092,[::1]:9092',
      CACHE_HOST: '127.0.0.53',
      DEMO_LATENCY_MS: '20',
      TABLE: 'orders-prod',
      API: 'https://payments.internal/v1',
      CLUSTER: { 'Fn::GetAtt': ['KafkaLanesRedis', 'ConfigurationEndPoint.Address'] },
    });

    // Assess
    expect(problems.map((problem) => problem.split(':')[0])).toEqual([
      'functions.orders.environment.DEMO_RESULTS_REDIS_URL',
      'functions.orders.environment.PAYMENTS_URL',
      'functions.orders.environment.PEERS',
      'functions.orders.environment.CACHE_HOST',
    ]);
    expect(problems[0]).toBe(
      'functions.orders.environment.DEMO_RESULTS_REDIS_URL: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address); ' +
        'the local stack is for `serverless offline` (custom.kafkaLanes.offline), where the functions get its addresses',
    );
  });

  it('accepts an environment without one, and none at all', () => {
    expect(loopbackEnvironmentProblems('provider.environment', { LOG_LEVEL: 'info', RATE: '0.5', URL: 'https://localhost.example.org/x' })).toEqual([]);
    expect(loopbackEnvironmentProblems('provider.environment', undefined)).toEqual([]);
  });
});

describe('mskServerlessRegionWarning', () => {
  const stack = { KafkaLanesMsk: { Type: 'AWS::MSK::ServerlessCluster' }, KafkaLanesRedis: { Type: 'AWS::ElastiCache::ReplicationGroup' } };

  it('warns about an MSK Serverless cluster in a region the MSK guide does not list, naming the resource and the region', () => {
    expect(mskServerlessRegionWarning('sa-east-1', stack)).toMatch(/^resources\.KafkaLanesMsk: MSK Serverless is not offered in `sa-east-1` according to AWS's MSK developer guide/);
  });

  it('says nothing in a listed region, without a serverless cluster, or without a region', () => {
    expect(mskServerlessRegionWarning('eu-west-1', stack)).toBeUndefined();
    expect(mskServerlessRegionWarning('sa-east-1', { KafkaLanesMsk: { Type: 'AWS::MSK::Cluster' } })).toBeUndefined();
    expect(mskServerlessRegionWarning(undefined, stack)).toBeUndefined();
  });
});

describe('vpcProblems', () => {
  const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';

  it.each([
    ['an MSK trigger', { setting: 'functions.orders.events.msk.arn', value: ARN, msk: true }, 'functions.orders.events.msk.arn is an MSK cluster'],
    ['an ElastiCache Redis', { setting: 'functions.orders.kafkaLanes.redis.url', value: 'rediss://shop.abc123.euw1.cache.amazonaws.com:6379' }, 'is an ElastiCache endpoint'],
    ['MSK brokers', { setting: 'functions.orders.kafkaLanes.kafka.brokers', value: 'b-1.shop.abc123.c2.kafka.eu-west-1.amazonaws.com:9098' }, 'is an MSK broker'],
    ['a private address', { setting: 'functions.orders.events.kafka.bootstrapServers', value: '10.0.3.7:9092,10.0.4.7:9092' }, 'is a private address (RFC 1918)'],
  ])('refuses a function in no VPC that reaches %s, naming the setting and the fix', (_what, target, reason) => {
    // Act
    const found = vpcProblems('functions.orders', [target]);

    // Assess
    expect(found.warnings).toEqual([]);
    expect(found.problems).toEqual([expect.stringContaining('functions.orders: expected a VPC for a function whose brokers or Redis are private, got none: ')]);
    expect(found.problems[0]).toContain(reason);
    expect(found.problems[0]).toContain('`provider.vpc` (or `functions.orders.vpc`) with `subnetIds` (private subnets) and `securityGroupIds`');
  });

  it('warns where it cannot tell (a CloudFormation value, a host name of your own)', () => {
    // Act
    const found = vpcProblems('functions.orders', [{ setting: 'functions.orders.kafkaLanes.redis.url', value: { 'Fn::GetAtt': ['Redis', 'Url'] } }]);

    // Assess
    expect(found.problems).toEqual([]);
    expect(found.warnings).toEqual([expect.stringContaining('functions.orders is in no VPC: if functions.orders.kafkaLanes.redis.url is reached from a VPC only, give the functions the VPC')]);
    expect(privateEndpoint('rediss://redis.example.net:6379')).toBeUndefined();
    expect(privateEndpoint('172.31.0.9:9092')).toBe('a private address (RFC 1918)');
    expect(privateEndpoint('172.32.0.9:9092')).toBeUndefined();
  });
});

describe('undeclaredSendsWarning', () => {
  it("names each literal topic a handler's file sends to that kafkaLanes.outputs does not declare", () => {
    // Prepare: the README's handler, as a user writes it
    const source = "ctx.send('orders-paid', { key: order.customerId, value: { orderId: order.orderId } });\nctx.send(\"orders-refused\", { value: 1 });";

    // Act / Assess
    expect(undeclaredSendsWarning('functions.orders', source, ['orders-paid'])).toBe(
      'functions.orders: its handler sends to `orders-refused` (ctx.send), not declared in kafkaLanes.outputs (orders-paid): every such send fails its record, ' +
        'on AWS (MSK IAM refuses the write), under `serverless offline` and in `testLanes`. Add it to `kafkaLanes.outputs`',
    );
    expect(undeclaredSendsWarning('functions.orders', source, ['orders-paid', 'orders-refused'])).toBeUndefined();
    expect(undeclaredSendsWarning('functions.orders', 'await sqs.send(command);', [])).toBeUndefined();
  });
});

describe('existingVpcProblems', () => {
  const network = { KafkaLanesVpcId: { Type: 'String', Default: '' }, KafkaLanesSubnetIds: { Type: 'CommaDelimitedList', Default: '' } };

  it('passes a created VPC, an existing one with two subnets, and a service without infra/aws/network.yml', () => {
    expect(existingVpcProblems(network)).toEqual([]);
    expect(existingVpcProblems({ KafkaLanesVpcId: { Default: 'vpc-0a1b' }, KafkaLanesSubnetIds: { Default: 'subnet-a, subnet-b' } })).toEqual([]);
    expect(existingVpcProblems({})).toEqual([]);
  });

  it.each([
    ['an existing VPC without subnets', { Default: 'vpc-0a1b' }, { Default: '' }, 'expected two or more private subnets of the existing VPC `vpc-0a1b` (in two or more AZs: MSK\'s brokers and Redis spread over them), got none: --param subnetIds=subnet-a,subnet-b'],
    ['an existing VPC with one subnet', { Default: 'vpc-0a1b' }, { Default: 'subnet-a' }, 'got `subnet-a`: --param subnetIds=subnet-a,subnet-b'],
    ['subnets without a VPC', { Default: '' }, { Default: 'subnet-a,subnet-b' }, 'expected no subnets when the stack creates its VPC (KafkaLanesVpcId empty), got `subnet-a,subnet-b`: give the VPC too (--param vpcId=vpc-...), or leave the subnets out'],
  ])('refuses %s, naming the parameter and the fix', (_what, vpc, subnets, message) => {
    // Act: the example's last fragment gives the stage's values as the parameters' Default (merged over network.yml's)
    const { parameters } = declaredTemplate([{ Parameters: network }, { Parameters: { KafkaLanesVpcId: vpc, KafkaLanesSubnetIds: subnets } }]);

    // Assess
    expect(parameters['KafkaLanesSubnetIds']).toEqual({ Type: 'CommaDelimitedList', ...subnets });
    expect(existingVpcProblems(parameters)).toEqual([expect.stringContaining(message)]);
  });
});

describe('exampleNetworkParamWarning', () => {
  it("names the example stack's endpoint switches given to a service without its network, and what a VPC needs instead", () => {
    const warning = exampleNetworkParamWarning(['createEndpoints=false', 'subnetIds=subnet-a'], { prod: { subnetIds: ['subnet-a'] } }, {});
    expect(warning).toContain("--param createEndpoints: a switch of the example stack's network (node_modules/kafka-lanes/infra/aws/network.yml)");
    expect(warning).toContain('behind a NAT gateway, nothing to set');
    expect(warning).toContain('node_modules/kafka-lanes/docs/deploy.md, "Your own service"');
  });

  it('says nothing to the example stack, to a service that declares the param itself, or without such a param', () => {
    expect(exampleNetworkParamWarning(['createEndpoints=false'], undefined, { KafkaLanesCreateEndpoints: { Default: 'true' } })).toBeUndefined();
    expect(exampleNetworkParamWarning('createEndpoints=false', { default: { createEndpoints: 'true' } }, {})).toBeUndefined();
    expect(exampleNetworkParamWarning(['vpcId=vpc-1'], undefined, {})).toBeUndefined();
    expect(exampleNetworkParamWarning(undefined, undefined, {})).toBeUndefined();
  });
});

describe('invokeLocalHint', () => {
  const loopback = ['functions.orders.kafkaLanes.redis.url: expected an address a deployed function can reach, got `redis://127.0.0.1:6379` (a loopback address)'];

  it('names kafka-lanes produce and serverless offline where invoke local is refused for a loopback address', () => {
    expect(invokeLocalHint(['invoke', 'local'], loopback)).toEqual([expect.stringContaining("`npx kafka-lanes produce <topic> --key <key> '<value>'`")]);
    expect(invokeLocalHint(['invoke', 'local'], loopback)[0]).toContain('`serverless offline` does not add it');
  });

  it('adds nothing to another command, or to other problems', () => {
    expect(invokeLocalHint(['package'], loopback)).toEqual([]);
    expect(invokeLocalHint(['invoke', 'local'], ['functions.orders.timeout: expected at most 900 seconds'])).toEqual([]);
  });
});
