import type * as z from 'zod/mini';
import { AWS_IAM_MECHANISM, ENV, MSK_CLUSTER_ARN } from './constants';
import { sourceOf } from './issues';
import type { LanesOptions } from './lanes-options';
import { describeGiven, fromEnvironment, invalidOption } from './messages';
import type { kafkaShape, redisShape } from './schema';

type ParsedKafka = z.infer<z.ZodMiniObject<typeof kafkaShape>>;
type ParsedRedis = z.infer<z.ZodMiniObject<typeof redisShape>>;

/** The Kafka and Redis options, each valid on its own, with where their values came from. */
interface Connections {
  readonly kafka: ParsedKafka;
  readonly redis: ParsedRedis;
  readonly sources: ReadonlyMap<string, string>;
  readonly env: NodeJS.ProcessEnv;
}

/** An option the others refuse: what was expected of it, what it was given, and what more there is to say. */
interface Refusal {
  readonly path: string;
  readonly expected: string;
  readonly given: unknown;
  readonly note?: string;
}

/**
 * What the Kafka and Redis options refuse of one another, in the order the problems are told: each rule gives the
 * refusal, or `undefined` when the options agree. The region MSK IAM tokens are signed for is `region`'s own.
 */
const CONNECTION_RULES: ReadonlyArray<(given: Connections) => Refusal | string | undefined> = [
  ({ kafka, sources }) =>
    kafka.mskClusterArn !== undefined && kafka.brokers.length > 0
      ? {
          path: 'kafka.mskClusterArn',
          expected: 'either `kafka.brokers` or `kafka.mskClusterArn`, not both (the brokers of an MSK cluster come from its ARN)',
          given: kafka.mskClusterArn,
          note: `\`kafka.brokers\` is ${describeGiven('kafka.brokers', kafka.brokers)}${fromEnvironment(sourceOf('kafka.brokers', sources))}`,
        }
      : undefined,
  ({ kafka }) =>
    kafka.sasl?.mechanism === AWS_IAM_MECHANISM && kafka.ssl === false
      ? { path: 'kafka.ssl', expected: "`true` with `kafka.sasl.mechanism: 'aws-iam'` (MSK IAM access control runs over TLS only)", given: false }
      : undefined,
  ({ kafka }) =>
    kafka.mskClusterArn !== undefined && kafka.sasl?.mechanism === 'plain'
      ? { path: 'kafka.sasl.mechanism', expected: '`scram-sha-512` or `aws-iam` with an MSK cluster (MSK offers no SASL/PLAIN)', given: 'plain' }
      : undefined,
  (given) =>
    given.kafka.sasl?.mechanism === AWS_IAM_MECHANISM && iamRegion(given) === undefined
      ? `Missing kafka-lanes option \`kafka.sasl.region\`: expected the AWS region MSK IAM tokens are signed for, in \`kafka.sasl.region\`, ` +
        `\`kafka.mskClusterArn\`, or the environment variable \`${ENV.awsRegion}\` (Lambda sets it), got none`
      : undefined,
  ({ redis, sources }) =>
    redis.password !== undefined && redis.passwordSecret !== undefined
      ? {
          path: 'redis.passwordSecret',
          expected: 'either `redis.password` (the token) or `redis.passwordSecret` (where it is kept), not both',
          given: redis.passwordSecret,
          note: `\`redis.password\` is set too${fromEnvironment(sourceOf('redis.password', sources))}`,
        }
      : undefined,
  ({ redis }) =>
    redis.tls === false && redis.clusterNodes.length === 0 && redis.url.startsWith('rediss:')
      ? { path: 'redis.tls', expected: '`true` or nothing with a `rediss://` URL (`rediss` is Redis over TLS)', given: false }
      : undefined,
];

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
  const given: Connections = { kafka, redis, sources, env };
  const problems = CONNECTION_RULES.map((rule) => rule(given))
    .filter((refusal) => refusal !== undefined)
    .map((refusal) =>
      typeof refusal === 'string'
        ? refusal
        : invalidOption(refusal.path, refusal.expected, describeGiven(refusal.path, refusal.given), { variable: sourceOf(refusal.path, sources), note: refusal.note }),
    );
  if (problems.length > 0) return { problems };
  const { mskClusterArn } = kafka;
  const sasl = resolvedSasl(given);
  return {
    kafka: {
      brokers: kafka.brokers,
      clientId: kafka.clientId,
      // MSK encrypts client traffic by default and its IAM and SCRAM listeners are TLS only.
      ssl: kafka.ssl ?? (kafka.sasl?.mechanism === AWS_IAM_MECHANISM || mskClusterArn !== undefined),
      ...(sasl === undefined ? {} : { sasl }),
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

/** The region MSK IAM tokens are signed for: `kafka.sasl.region`, else the cluster's, else Lambda's. */
function iamRegion({ kafka, env }: Connections): string | undefined {
  const { mskClusterArn, sasl } = kafka;
  return sasl?.region ?? (mskClusterArn === undefined ? undefined : MSK_CLUSTER_ARN.exec(mskClusterArn)?.[1]) ?? read(env, ENV.awsRegion) ?? read(env, ENV.awsDefaultRegion);
}

/** The SASL the Kafka clients use, once the rules have found nothing to refuse. */
function resolvedSasl(given: Connections): LanesOptions['kafka']['sasl'] {
  const { sasl } = given.kafka;
  if (sasl?.mechanism === AWS_IAM_MECHANISM) {
    const region = iamRegion(given);
    return region === undefined ? undefined : { mechanism: AWS_IAM_MECHANISM, region };
  }
  if (sasl !== undefined && sasl.secret !== undefined) return { mechanism: sasl.mechanism, secret: sasl.secret };
  if (sasl !== undefined && sasl.username !== undefined && sasl.password !== undefined) return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password };
  return undefined;
}

function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}
