import type * as z from 'zod/mini';
import { AWS_IAM_MECHANISM, ENV, MSK_CLUSTER_ARN } from './constants';
import { sourceOf } from './issues';
import type { LanesOptions } from './lanes-options';
import { describeGiven, fromEnvironment, invalidOption } from './messages';
import type { kafkaShape, redisShape } from './schema';

type ParsedKafka = z.infer<z.ZodMiniObject<typeof kafkaShape>>;
type ParsedRedis = z.infer<z.ZodMiniObject<typeof redisShape>>;

/**
 * The Kafka and Redis options once each is valid on its own: what they say together (one source of brokers,
 * TLS where the auth needs it, the region MSK IAM tokens are signed for) and the defaults that depend on
 * other options.
 */
export function resolveConnections(
  kafka: ParsedKafka,
  redis: ParsedRedis,
  sources: ReadonlyMap<string, string>,
  env: NodeJS.ProcessEnv,
): { kafka: LanesOptions['kafka']; redis: LanesOptions['redis'] } | { problems: string[] } {
  const problems: string[] = [];
  const given = (path: string, value: unknown): string => describeGiven(path, value);
  const { mskClusterArn, sasl } = kafka;
  if (mskClusterArn !== undefined && kafka.brokers.length > 0) {
    problems.push(
      invalidOption(
        'kafka.mskClusterArn',
        'either `kafka.brokers` or `kafka.mskClusterArn`, not both (the brokers of an MSK cluster come from its ARN)',
        given('kafka.mskClusterArn', mskClusterArn),
        sourceOf('kafka.mskClusterArn', sources),
        `\`kafka.brokers\` is ${describeGiven('kafka.brokers', kafka.brokers)}${fromEnvironment(sourceOf('kafka.brokers', sources))}`,
      ),
    );
  }
  const iam = sasl?.mechanism === AWS_IAM_MECHANISM;
  if (iam && kafka.ssl === false) {
    problems.push(
      invalidOption('kafka.ssl', "`true` with `kafka.sasl.mechanism: 'aws-iam'` (MSK IAM access control runs over TLS only)", given('kafka.ssl', false), sourceOf('kafka.ssl', sources)),
    );
  }
  if (mskClusterArn !== undefined && sasl?.mechanism === 'plain') {
    problems.push(
      invalidOption(
        'kafka.sasl.mechanism',
        '`scram-sha-512` or `aws-iam` with an MSK cluster (MSK offers no SASL/PLAIN)',
        given('kafka.sasl.mechanism', 'plain'),
        sourceOf('kafka.sasl.mechanism', sources),
      ),
    );
  }
  let resolvedSasl: LanesOptions['kafka']['sasl'];
  if (sasl?.mechanism === AWS_IAM_MECHANISM) {
    const region = sasl.region ?? (mskClusterArn === undefined ? undefined : MSK_CLUSTER_ARN.exec(mskClusterArn)?.[1]) ?? read(env, ENV.awsRegion) ?? read(env, ENV.awsDefaultRegion);
    if (region === undefined) {
      problems.push(
        `Missing kafka-lanes option \`kafka.sasl.region\`: expected the AWS region MSK IAM tokens are signed for, in \`kafka.sasl.region\`, ` +
          `\`kafka.mskClusterArn\`, or the environment variable \`${ENV.awsRegion}\` (Lambda sets it), got none`,
      );
    } else {
      resolvedSasl = { mechanism: AWS_IAM_MECHANISM, region };
    }
  } else if (sasl !== undefined && sasl.secret !== undefined) {
    resolvedSasl = { mechanism: sasl.mechanism, secret: sasl.secret };
  } else if (sasl !== undefined && sasl.username !== undefined && sasl.password !== undefined) {
    resolvedSasl = { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password };
  }
  if (redis.password !== undefined && redis.passwordSecret !== undefined) {
    problems.push(
      invalidOption(
        'redis.passwordSecret',
        'either `redis.password` (the token) or `redis.passwordSecret` (where it is kept), not both',
        given('redis.passwordSecret', redis.passwordSecret),
        sourceOf('redis.passwordSecret', sources),
        `\`redis.password\` is set too${fromEnvironment(sourceOf('redis.password', sources))}`,
      ),
    );
  }
  const secure = redis.clusterNodes.length === 0 && redis.url.startsWith('rediss:');
  if (redis.tls === false && secure) {
    problems.push(
      invalidOption('redis.tls', '`true` or nothing with a `rediss://` URL (`rediss` is Redis over TLS)', given('redis.tls', false), sourceOf('redis.tls', sources)),
    );
  }
  if (problems.length > 0) return { problems };
  return {
    kafka: {
      brokers: kafka.brokers,
      clientId: kafka.clientId,
      // MSK encrypts client traffic by default and its IAM and SCRAM listeners are TLS only.
      ssl: kafka.ssl ?? (iam || mskClusterArn !== undefined),
      ...(resolvedSasl === undefined ? {} : { sasl: resolvedSasl }),
      ...(mskClusterArn === undefined ? {} : { mskClusterArn }),
    },
    redis: {
      url: redis.url,
      clusterNodes: redis.clusterNodes,
      ...(redis.tls === undefined ? {} : { tls: redis.tls }),
      ...(redis.username === undefined ? {} : { username: redis.username }),
      ...(redis.password === undefined ? {} : { password: redis.password }),
      ...(redis.passwordSecret === undefined ? {} : { passwordSecret: redis.passwordSecret }),
      ...(redis.waitForReplicas === undefined ? {} : { waitForReplicas: redis.waitForReplicas }),
      ...(redis.waitTimeoutMs === undefined ? {} : { waitTimeoutMs: redis.waitTimeoutMs }),
    },
  };
}

function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}
