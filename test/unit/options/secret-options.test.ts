import { resolveOptions, type LanesOptionsInput } from '../../../src/options';
import { OptionsError } from '../../../src/options/errors';
import { formatSecretRef, parseSecretRef } from '../../../src/options/secret-ref';

const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-kafka-AbCdEf';
const PARAMETER = 'arn:aws:ssm:eu-west-1:123456789012:parameter/shop/redis-token';

function problemsOf(input: LanesOptionsInput, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    resolveOptions(input, env);
    return [];
  } catch (error) {
    if (error instanceof OptionsError) return [...error.problems];
    throw error;
  }
}

describe('parseSecretRef', () => {
  it.each([
    [SECRET, { store: 'secretsmanager', id: SECRET, region: 'eu-west-1' }],
    ['shop/kafka', { store: 'secretsmanager', id: 'shop/kafka' }],
    ['ssm:/shop/redis-token', { store: 'ssm', name: '/shop/redis-token' }],
    [PARAMETER, { store: 'ssm', name: PARAMETER, region: 'eu-west-1' }],
    [`ssm:${PARAMETER}`, { store: 'ssm', name: PARAMETER, region: 'eu-west-1' }],
  ])('reads %s', (text, expected) => {
    // Act
    const ref = parseSecretRef(text);

    // Assess
    expect(ref).toEqual(expected);
    expect('problem' in ref ? undefined : parseSecretRef(formatSecretRef(ref))).toEqual(expected);
  });

  it.each([
    ['', ['secretsmanager', 'ssm'], 'empty'],
    ['arn:aws:s3:::bucket/key', ['secretsmanager', 'ssm'], 'an ARN of `s3` `bucket`'],
    ['arn:aws:secretsmanager:eu-west-1:123456789012:rotation', ['secretsmanager'], 'an ARN of `secretsmanager` `rotation`'],
    ['ssm:', ['secretsmanager', 'ssm'], 'an SSM parameter name holds letters, digits and `._-/` only'],
    ['my secret', ['secretsmanager', 'ssm'], 'a secret name holds letters, digits and `/_+=.@-` only'],
    ['ssm:/shop/token', ['secretsmanager'], 'an SSM parameter; this setting reads Secrets Manager only'],
  ] as const)('refuses %p, saying why', (text, stores, problem) => {
    // Act
    const ref = parseSecretRef(text, stores);

    // Assess
    expect(ref).toEqual({ problem });
  });
});

describe('secret references in the options', () => {
  it('reads KAFKA_LANES_SASL_SECRET as SCRAM-SHA-512 credentials kept in Secrets Manager, TLS on for the MSK cluster', () => {
    // Act
    const options = resolveOptions({ group: 'g' }, { KAFKA_LANES_SASL_SECRET: SECRET, KAFKA_LANES_MSK_CLUSTER_ARN: 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1' });

    // Assess
    expect(options.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', secret: SECRET });
    expect(options.kafka.ssl).toBe(true);
  });

  it('takes the mechanism from KAFKA_LANES_SASL_MECHANISM beside the secret', () => {
    // Act
    const options = resolveOptions({ group: 'g' }, { KAFKA_LANES_SASL_SECRET: 'shop/kafka', KAFKA_LANES_SASL_MECHANISM: 'SCRAM-SHA-256' });

    // Assess
    expect(options.kafka.sasl).toEqual({ mechanism: 'scram-sha-256', secret: 'shop/kafka' });
  });

  it('reads KAFKA_LANES_REDIS_AUTH_SECRET as where the AUTH token is kept, never as the token', () => {
    // Act
    const options = resolveOptions({ group: 'g' }, { KAFKA_LANES_REDIS_AUTH_SECRET: 'ssm:/shop/redis-token' });

    // Assess
    expect(options.redis.passwordSecret).toBe('ssm:/shop/redis-token');
    expect(options.redis.password).toBeUndefined();
  });

  it.each<[string, LanesOptionsInput, NodeJS.ProcessEnv, string]>([
    [
      'the secret variable with a username',
      { group: 'g' },
      { KAFKA_LANES_SASL_SECRET: SECRET, KAFKA_LANES_SASL_USERNAME: 'u' },
      'Invalid kafka-lanes option `kafka.sasl` (from environment variables): expected `KAFKA_LANES_SASL_SECRET` alone (the secret holds the username and password) or with `KAFKA_LANES_SASL_MECHANISM` of a password mechanism, got it with `KAFKA_LANES_SASL_USERNAME`',
    ],
    [
      'the secret variable with MSK IAM',
      { group: 'g' },
      { KAFKA_LANES_SASL_SECRET: SECRET, KAFKA_LANES_SASL_MECHANISM: 'aws-iam' },
      'Invalid kafka-lanes option `kafka.sasl` (from environment variables): expected `KAFKA_LANES_SASL_SECRET` alone (the secret holds the username and password) or with `KAFKA_LANES_SASL_MECHANISM` of a password mechanism, got it with `KAFKA_LANES_SASL_MECHANISM=aws-iam`',
    ],
    [
      'an SSM parameter for the SASL secret',
      { group: 'g' },
      { KAFKA_LANES_SASL_SECRET: 'ssm:/shop/kafka' },
      'Invalid kafka-lanes option `kafka.sasl.secret` (from environment variable `KAFKA_LANES_SASL_SECRET`): expected a Secrets Manager secret (its ARN or name), got `ssm:/shop/kafka` (string): an SSM parameter; this setting reads Secrets Manager only',
    ],
    [
      'a secret and a password in code',
      { group: 'g', kafka: { sasl: { mechanism: 'scram-sha-512', secret: SECRET, password: 'hunter2' } as never } },
      {},
      'Invalid kafka-lanes option `kafka.sasl.password`: expected none with `secret` (the secret holds the username and password), got `***` (string)',
    ],
    [
      'a secret with MSK IAM in code',
      { group: 'g', kafka: { sasl: { mechanism: 'aws-iam', secret: SECRET } as never } },
      {},
      `Invalid kafka-lanes option \`kafka.sasl.secret\`: expected none with \`mechanism: 'aws-iam'\` (MSK IAM signs with the function's AWS credentials), got \`${SECRET}\` (string)`,
    ],
    [
      'both Redis AUTH variables',
      { group: 'g' },
      { KAFKA_LANES_REDIS_AUTH_TOKEN: 'hunter2', KAFKA_LANES_REDIS_AUTH_SECRET: PARAMETER },
      'Invalid kafka-lanes option `redis.password` (from environment variables): expected `KAFKA_LANES_REDIS_AUTH_TOKEN` (the token) or `KAFKA_LANES_REDIS_AUTH_SECRET` (where it is kept), not both, got both',
    ],
    [
      'a Redis password and its secret in code',
      { group: 'g', redis: { password: 'hunter2', passwordSecret: PARAMETER } },
      {},
      `Invalid kafka-lanes option \`redis.passwordSecret\`: expected either \`redis.password\` (the token) or \`redis.passwordSecret\` (where it is kept), not both, got \`${PARAMETER}\` (string): \`redis.password\` is set too`,
    ],
    [
      'a Redis secret that is an ARN of another service',
      { group: 'g' },
      { KAFKA_LANES_REDIS_AUTH_SECRET: 'arn:aws:s3:::bucket/token' },
      'Invalid kafka-lanes option `redis.passwordSecret` (from environment variable `KAFKA_LANES_REDIS_AUTH_SECRET`): expected a Secrets Manager secret (its ARN or name) or an SSM SecureString parameter (`ssm:/path/name` or its ARN), got `arn:aws:s3:::bucket/token` (string): an ARN of `s3` `bucket`',
    ],
  ])('refuses %s, naming the setting', (_what, input, env, problem) => {
    // Act
    const problems = problemsOf(input, env);

    // Assess
    expect(problems).toEqual([problem]);
    expect(problems.join()).not.toContain('hunter2');
  });
});
