import { OptionsError, resolveOptions } from '../../../src/options';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/0a1b2c3d-4e5f-6789-abcd-ef0123456789-2';

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof OptionsError) return [...error.problems];
    throw error;
  }
  throw new Error('expected an OptionsError');
}

describe('connection options', () => {
  describe('Kafka', () => {
    it('takes MSK IAM from the environment: TLS on, the region from the ARN', () => {
      const options = resolveOptions({ group: 'g' }, { KAFKA_LANES_SASL_MECHANISM: 'AWS-IAM', KAFKA_LANES_MSK_CLUSTER_ARN: ARN });
      expect(options.kafka).toEqual({
        brokers: [],
        clientId: 'kafka-lanes',
        ssl: true,
        sasl: { mechanism: 'aws-iam', region: 'eu-west-1' },
        mskClusterArn: ARN,
      });
    });

    it('signs MSK IAM tokens for the region given, else AWS_REGION', () => {
      const given = resolveOptions(
        { group: 'g', kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-iam', region: 'us-east-2' } } },
        { AWS_REGION: 'eu-west-1' },
      );
      const lambda = resolveOptions({ group: 'g', kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-iam' } } }, { AWS_REGION: 'eu-west-1' });
      expect(given.kafka.sasl).toEqual({ mechanism: 'aws-iam', region: 'us-east-2' });
      expect(lambda.kafka.sasl).toEqual({ mechanism: 'aws-iam', region: 'eu-west-1' });
    });

    it('keeps SCRAM over TLS for an MSK ARN, and plaintext brokers without one', () => {
      const env = {
        KAFKA_LANES_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_LANES_SASL_USERNAME: 'u',
        KAFKA_LANES_SASL_PASSWORD: 'p',
        KAFKA_LANES_MSK_CLUSTER_ARN: ARN,
      };
      expect(resolveOptions({ group: 'g' }, env).kafka).toMatchObject({ ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } });
      expect(resolveOptions({ group: 'g', kafka: { brokers: ['k:9092'] } }, {}).kafka.ssl).toBe(false);
    });

    it.each([
      [
        'brokers and an ARN',
        { kafka: { brokers: ['k:9092'] } },
        { KAFKA_LANES_MSK_CLUSTER_ARN: ARN },
        'Invalid kafka-lanes option `kafka.mskClusterArn` (from environment variable `KAFKA_LANES_MSK_CLUSTER_ARN`): expected either `kafka.brokers` or `kafka.mskClusterArn`, not both',
      ],
      [
        'IAM without TLS',
        { kafka: { brokers: ['k:9098'], ssl: false, sasl: { mechanism: 'aws-iam', region: 'eu-west-1' } } },
        {},
        "Invalid kafka-lanes option `kafka.ssl`: expected `true` with `kafka.sasl.mechanism: 'aws-iam'` (MSK IAM access control runs over TLS only), got `false` (boolean)",
      ],
      [
        'IAM without a region',
        { kafka: { brokers: ['k:9098'], sasl: { mechanism: 'aws-iam' } } },
        {},
        'Missing kafka-lanes option `kafka.sasl.region`: expected the AWS region MSK IAM tokens are signed for',
      ],
      [
        'IAM with a password',
        { kafka: { brokers: ['k:9098'], sasl: { mechanism: 'aws-iam', region: 'eu-west-1', password: 'p' } } },
        {},
        "Invalid kafka-lanes option `kafka.sasl.password`: expected none with `mechanism: 'aws-iam'`",
      ],
      [
        'IAM from the environment with a username',
        {},
        { KAFKA_LANES_SASL_MECHANISM: 'aws-iam', KAFKA_LANES_SASL_USERNAME: 'u', AWS_REGION: 'eu-west-1' },
        'expected no username or password with `KAFKA_LANES_SASL_MECHANISM=aws-iam`',
      ],
      [
        'a region with SCRAM',
        { kafka: { sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p', region: 'eu-west-1' } } },
        {},
        "Invalid kafka-lanes option `kafka.sasl.region`: expected none: `region` applies to `mechanism: 'aws-iam'` only",
      ],
      [
        'SASL/PLAIN with MSK',
        { kafka: { mskClusterArn: ARN, sasl: { mechanism: 'plain', username: 'u', password: 'p' } } },
        {},
        'Invalid kafka-lanes option `kafka.sasl.mechanism`: expected `scram-sha-512` or `aws-iam` with an MSK cluster (MSK offers no SASL/PLAIN)',
      ],
      [
        'a malformed ARN',
        {},
        { KAFKA_LANES_MSK_CLUSTER_ARN: 'arn:aws:kafka:eu-west-1:1234:cluster/orders' },
        'Invalid kafka-lanes option `kafka.mskClusterArn` (from environment variable `KAFKA_LANES_MSK_CLUSTER_ARN`): expected an MSK cluster ARN like',
      ],
    ])('refuses %s, naming it', (_, input, env, problem) => {
      const problems = problemsOf(() => resolveOptions({ group: 'g', ...input } as Parameters<typeof resolveOptions>[0], env));
      expect(problems).toEqual([expect.stringContaining(problem)]);
      expect(problems.join()).not.toMatch(/`p`/);
    });
  });

  describe('Redis', () => {
    it('takes TLS, the ACL user and the AUTH token from the environment, beside cluster nodes', () => {
      const env = {
        KAFKA_LANES_REDIS_CLUSTER_NODES: 'clustercfg.orders.abc123.euw1.cache.amazonaws.com:6379',
        KAFKA_LANES_REDIS_TLS: 'true',
        KAFKA_LANES_REDIS_USERNAME: 'lanes',
        KAFKA_LANES_REDIS_AUTH_TOKEN: 'a-long-token-from-secrets-manager',
      };
      expect(resolveOptions({ group: 'g' }, env).redis).toEqual({
        url: 'redis://127.0.0.1:6379',
        clusterNodes: ['clustercfg.orders.abc123.euw1.cache.amazonaws.com:6379'],
        tls: true,
        username: 'lanes',
        password: 'a-long-token-from-secrets-manager',
      });
    });

    it('refuses TLS off with a rediss:// URL and a TLS flag that is not a boolean, never showing the token', () => {
      const problems = problemsOf(() => resolveOptions({ group: 'g', redis: { url: 'rediss://cache:6379', tls: false } }, { KAFKA_LANES_REDIS_AUTH_TOKEN: 'secret-token' }));
      expect(problems).toEqual([
        'Invalid kafka-lanes option `redis.tls`: expected `true` or nothing with a `rediss://` URL (`rediss` is Redis over TLS), got `false` (boolean)',
      ]);
      const flag = problemsOf(() => resolveOptions({ group: 'g' }, { KAFKA_LANES_REDIS_TLS: 'yes' }));
      expect(flag).toEqual([
        'Invalid kafka-lanes option `redis.tls` (from environment variable `KAFKA_LANES_REDIS_TLS`): expected `true` or `false`, got `yes` (string)',
      ]);
      const token = problemsOf(() => resolveOptions({ group: 'g', redis: { password: 42 } } as unknown as Parameters<typeof resolveOptions>[0], {}));
      expect(token).toEqual(['Invalid kafka-lanes option `redis.password`: expected a non-empty string, got `***` (number)']);
    });
  });
});
