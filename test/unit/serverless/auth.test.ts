import { plaintextSecrets } from '../../../src/serverless/auth';
import { functionBlockSchema, validateBlock, type FunctionBlock } from '../../../src/serverless/config';
import { groupGrants, secretGrants } from '../../../src/serverless/iam';
import { planFunction } from '../../../src/serverless/plan';
import type { FunctionView, Statement } from '../../../src/serverless/types';

const CLUSTER = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_shop-AbCdEf';
const OTHER = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:AmazonMSK_lanes-XyZxYz';
const service = { service: 'shop', stage: 'dev', region: 'eu-west-1' };

const msk = (settings: Record<string, unknown> = {}): FunctionView => ({ handler: 'h.handler', events: [{ msk: { arn: CLUSTER, topic: 'orders', ...settings } }] });
const selfManaged = (access: Record<string, unknown>): FunctionView => ({
  handler: 'h.handler',
  events: [{ kafka: { topic: 'orders', bootstrapServers: ['b-1.kafka.internal:9096'], accessConfigurations: access } }],
});

function plan(fn: FunctionView, block: FunctionBlock): NonNullable<ReturnType<typeof planFunction>['plan']> {
  const planned = planFunction(service, 'orders', fn, { group: 'shop-orders', redis: { url: 'rediss://redis.internal:6379' }, ...block });
  expect(planned.problems).toEqual([]);
  return planned.plan!;
}

const secretReads = (statements: readonly Statement[]): Statement[] =>
  statements.filter((statement) => statement.Action.some((action) => /^(secretsmanager|ssm|kms):/.test(action)) && statement.Condition?.['StringLike'] === undefined);

describe('kafka.auth: scram', () => {
  it("takes an msk trigger's SCRAM secret: a reference in both functions' environment, TLS, and a read of exactly that secret for both roles", () => {
    // Act
    const planned = plan(msk({ saslScram512: SECRET }), {});
    const grants = groupGrants(planned, false);

    // Assess
    expect(planned.auth).toBe('scram');
    expect(planned.environment).toMatchObject({ KAFKA_LANES_SASL_MECHANISM: 'scram-sha-512', KAFKA_LANES_SASL_SECRET: SECRET, KAFKA_LANES_KAFKA_SSL: 'true', KAFKA_LANES_MSK_CLUSTER_ARN: CLUSTER });
    expect(planned.committer?.definition.environment).toBe(planned.environment);
    const expected = [
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: SECRET },
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:eu-west-1:123456789012:key/*' },
        Condition: { StringEquals: { 'kms:ViaService': 'secretsmanager.eu-west-1.amazonaws.com' } },
      },
    ];
    expect(secretReads(grants.committer)).toEqual(expected);
    expect(secretReads(grants.handler)).toEqual(expect.arrayContaining(expected));
    // SCRAM clients: no MSK IAM data-plane grant at all.
    expect([...grants.handler, ...grants.committer].flatMap((statement) => statement.Action).filter((action) => action.startsWith('kafka-cluster:'))).toEqual([]);
  });

  it.each([
    ['saslScram512Auth', 'scram-sha-512'],
    ['saslScram256Auth', 'scram-sha-256'],
    ['saslPlainAuth', 'plain'],
  ])("takes a self-managed trigger's %s secret with its mechanism, over TLS (Lambda reads SASL over TLS only)", (key, mechanism) => {
    // Act
    const planned = plan(selfManaged({ [key]: [SECRET] }), {});

    // Assess
    expect(planned.environment).toMatchObject({ KAFKA_LANES_SASL_MECHANISM: mechanism, KAFKA_LANES_SASL_SECRET: SECRET, KAFKA_LANES_KAFKA_SSL: 'true', KAFKA_LANES_BROKERS: 'b-1.kafka.internal:9096' });
  });

  it("prefers kafka.secret over the trigger's, and grants the producers' secret besides the trigger's", () => {
    // Act
    const planned = plan(msk({ saslScram512: SECRET }), { kafka: { auth: 'scram', secret: OTHER } });
    const { handler, committer } = groupGrants(planned, false);

    // Assess
    expect(planned.environment['KAFKA_LANES_SASL_SECRET']).toBe(OTHER);
    expect(handler).toContainEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: [SECRET] });
    expect(handler).toContainEqual({ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: OTHER });
    expect(committer.filter((statement) => statement.Action.includes('secretsmanager:GetSecretValue'))).toEqual([{ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: OTHER }]);
  });

  it('reads an IAM trigger with SCRAM producers when kafka.secret is given (kafka.auth follows it)', () => {
    // Act
    const planned = plan(msk(), { kafka: { secret: 'shop/lanes-kafka' } });

    // Assess
    expect(planned.auth).toBe('scram');
    expect(secretReads(groupGrants(planned, false).committer)[0]).toEqual({
      Effect: 'Allow',
      Action: ['secretsmanager:GetSecretValue'],
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:shop/lanes-kafka-??????' },
    });
  });

  it.each<[string, FunctionView, FunctionBlock, string]>([
    [
      'scram without any secret',
      msk(),
      { kafka: { auth: 'scram' } },
      'functions.orders.kafkaLanes.kafka.secret: expected the Secrets Manager secret holding the SCRAM username and password of the producers and the committer (`kafka.auth: scram`; the trigger has no `saslScram512` to take it from), got none',
    ],
    [
      'a secret with IAM',
      msk(),
      { kafka: { auth: 'iam', secret: SECRET } },
      `functions.orders.kafkaLanes.kafka.secret: expected no secret with \`kafka.auth: iam\` (the secret holds a SCRAM username and password), got "${SECRET}"`,
    ],
    [
      'an SSM parameter as the SASL secret',
      msk(),
      { kafka: { auth: 'scram', secret: 'ssm:/shop/kafka' } },
      'functions.orders.kafkaLanes.kafka.secret: expected a Secrets Manager secret (its ARN or name), got `ssm:/shop/kafka` (an SSM parameter; this setting reads Secrets Manager only)',
    ],
    [
      'a Redis secret that is an ARN of another service',
      msk(),
      { redis: { url: 'rediss://redis.internal:6379', authSecret: 'arn:aws:s3:::bucket/token' } },
      'functions.orders.kafkaLanes.redis.authSecret: expected a Secrets Manager secret (its ARN or name) or an SSM SecureString parameter (`ssm:/path/name` or its ARN), got `arn:aws:s3:::bucket/token` (an ARN of `s3` `bucket`)',
    ],
  ])('refuses %s, naming the setting', (_what, fn, block, problem) => {
    // Act
    const { problems } = planFunction(service, 'orders', fn, { group: 'shop-orders', redis: { url: 'rediss://redis.internal:6379' }, ...block });

    // Assess
    expect(problems).toEqual([problem]);
  });
});

describe('redis.authSecret', () => {
  it.each<[string, unknown, Statement[]]>([
    [
      'an SSM parameter by name',
      'ssm:/shop/redis-token',
      [
        { Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/shop/redis-token' } },
        {
          Effect: 'Allow',
          Action: ['kms:Decrypt'],
          Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*' },
          Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Sub': 'ssm.${AWS::Region}.amazonaws.com' } } },
        },
      ],
    ],
    [
      "the stack's own secret (`!Ref`)",
      { Ref: 'KafkaLanesRedisAuthSecret' },
      [
        { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: { Ref: 'KafkaLanesRedisAuthSecret' } },
        {
          Effect: 'Allow',
          Action: ['kms:Decrypt'],
          Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*' },
          Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Sub': 'secretsmanager.${AWS::Region}.amazonaws.com' } } },
        },
      ],
    ],
  ])('gives both functions the reference to %s and both roles a read of it alone', (_what, authSecret, statements) => {
    // Prepare
    const { value, problems } = validateBlock(functionBlockSchema, { group: 'shop-orders', redis: { clusterNodes: ['redis.internal:6379'], tls: true, authSecret } }, 'functions.orders.kafkaLanes');

    // Act
    const planned = plan(msk(), value!);
    const grants = groupGrants(planned, true);

    // Assess
    expect(problems).toEqual([]);
    expect(planned.environment['KAFKA_LANES_REDIS_AUTH_SECRET']).toEqual(authSecret);
    expect(planned.environment['KAFKA_LANES_REDIS_AUTH_TOKEN']).toBeUndefined();
    expect(secretReads(grants.handler)).toEqual(statements);
    expect(secretReads(grants.committer)).toEqual(statements);
  });

  it('reads a parameter or secret of another region through that region', () => {
    // Act
    const statements = secretGrants({ KAFKA_LANES_REDIS_AUTH_SECRET: 'arn:aws:ssm:us-east-1:210987654321:parameter/shop/token' });

    // Assess
    expect(statements).toEqual([
      { Effect: 'Allow', Action: ['ssm:GetParameter'], Resource: 'arn:aws:ssm:us-east-1:210987654321:parameter/shop/token' },
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt'],
        Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:us-east-1:210987654321:key/*' },
        Condition: { StringEquals: { 'kms:ViaService': 'ssm.us-east-1.amazonaws.com' } },
      },
    ]);
  });
});

describe('plaintextSecrets', () => {
  it('warns of an AUTH token in a plain environment variable, naming the setting that replaces it', () => {
    // Act
    const found = plaintextSecrets('orders', { KAFKA_LANES_REDIS_AUTH_TOKEN: { 'Fn::Sub': '{{resolve:secretsmanager:s:SecretString:token}}' } }, {});

    // Assess
    expect(found).toEqual({
      problems: [],
      warnings: [
        "kafka-lanes: functions.orders gets KAFKA_LANES_REDIS_AUTH_TOKEN as a plain environment variable, readable by whoever may read the function's configuration; `kafkaLanes.redis.authSecret` keeps only a reference there and the value is read at cold start",
      ],
    });
  });

  it('refuses a plain SASL password beside the secret the block names (every cold start would refuse both)', () => {
    // Act
    const found = plaintextSecrets('orders', { KAFKA_LANES_SASL_PASSWORD: 'hunter2' }, { KAFKA_LANES_SASL_SECRET: SECRET });

    // Assess
    expect(found.problems).toEqual([
      'functions.orders.environment.KAFKA_LANES_SASL_PASSWORD: expected no plain value beside `kafkaLanes.kafka.secret (with kafka.auth: scram)` (the functions read it from there), got one',
    ]);
    expect(found.problems.join()).not.toContain('hunter2');
  });
});
