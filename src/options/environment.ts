import { AWS_IAM_MECHANISM, ENV } from './constants';

/** The options with the environment filled in where an option was not given, and where each filled value came from. */
export interface WithEnvironment {
  /** A new object (the user's is never changed); `input` itself when it is not an object, for the schema to reject. */
  readonly input: unknown;
  /** Option path (`kafka.brokers`) -> the environment variable its value came from. */
  readonly sources: ReadonlyMap<string, string>;
  /** Problems found in the environment alone (e.g. SASL credentials given in part). */
  readonly problems: readonly string[];
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Fills options that were not given from the environment, which is read once, here (cold start). An empty
 * variable counts as unset. Values are converted, not validated: the schema validates them like options, and
 * `sources` lets its messages name the variable.
 * - `group` <- `KAFKA_LANES_GROUP`
 * - `redis.url` <- `KAFKA_LANES_REDIS_URL`, `redis.clusterNodes` <- `KAFKA_LANES_REDIS_CLUSTER_NODES` (comma
 *   separated), only when the options give neither: one Redis connection is one choice; both variables set
 *   is a problem.
 * - `kafka.brokers` <- `KAFKA_LANES_BROKERS` (comma separated); `kafka.ssl` <- `KAFKA_LANES_KAFKA_SSL`
 *   (`true` / `false`, any case).
 * - `kafka.sasl` <- `KAFKA_LANES_SASL_MECHANISM` (any case), `_USERNAME`, `_PASSWORD`: all three or none; or the
 *   mechanism `aws-iam` alone (MSK IAM). `kafka.mskClusterArn` <- `KAFKA_LANES_MSK_CLUSTER_ARN`.
 * - `kafka.sasl` <- `KAFKA_LANES_SASL_SECRET` (a Secrets Manager secret holding the username and password), with
 *   `KAFKA_LANES_SASL_MECHANISM` or else `scram-sha-512`; with the username or password variables, a problem.
 * - `redis.tls` <- `KAFKA_LANES_REDIS_TLS`, `redis.username` <- `KAFKA_LANES_REDIS_USERNAME`, each when the
 *   options do not give it; `redis.password` <- `KAFKA_LANES_REDIS_AUTH_TOKEN` or `redis.passwordSecret` <-
 *   `KAFKA_LANES_REDIS_AUTH_SECRET` when the options give neither (both variables set is a problem).
 * - `ordering` <- `KAFKA_LANES_ORDERING`: read by the committer, whose recovery rebuilds lanes by it; set in code
 *   to another value, a problem.
 * - `retry.tiers` <- `KAFKA_LANES_RETRY_TIERS` (comma separated), `deadLetter.policy` <-
 *   `KAFKA_LANES_DEAD_LETTER_POLICY`: set in code to another value than the deployment's, each is a problem
 *   (the committer follows the deployment). `partialBatchResponse` <-
 *   `KAFKA_LANES_PARTIAL_BATCH_RESPONSE`: the serverless plugin sets both from the deployment (the tiers its
 *   retry triggers read, and whether the event source mapping reports batch item failures).
 * - `eventRecordFormat` <- `KAFKA_LANES_EVENT_RECORD_FORMAT` (`SOURCE` / `JSON`, any case): what the trigger's schema
 *   registry integration delivers, set by the plugin from `kafkaLanes.schemaRegistry`.
 *
 * @example
 * withEnvironment({}, { KAFKA_LANES_GROUP: 'orders-svc' }).input; // { group: 'orders-svc', retry: {}, deadLetter: {}, redis: {}, kafka: {} }
 */
export function withEnvironment(input: unknown, env: Env): WithEnvironment {
  const sources = new Map<string, string>();
  const options = input === undefined ? {} : input;
  if (!isPlainObject(options)) return { input, sources, problems: [] };
  const from = environmentReader(env, sources);
  const result: Record<string, unknown> = { ...options };
  const problems = [
    ...rootFromEnvironment(result, from),
    ...deployedFromEnvironment(result, from),
    ...redisFromEnvironment(nested(result, 'redis'), from),
    ...kafkaFromEnvironment(nested(result, 'kafka'), from),
  ];
  return { input: result, sources, problems };
}

/** The environment as the options read it: an empty variable is unset; a value filled in notes its variable. */
interface EnvironmentReader {
  read(variable: string): string | undefined;
  /** `target[key]` (the last part of `path`) from `variable`, converted, unless the options give it. */
  fill(target: Record<string, unknown>, path: string, variable: string, convert?: (text: string) => unknown): void;
  /** Notes that the value at `path` came from `variable`. */
  note(path: string, variable: string): void;
}

function environmentReader(env: Env, sources: Map<string, string>): EnvironmentReader {
  const read = (variable: string): string | undefined => {
    const value = env[variable];
    return value === undefined || value === '' ? undefined : value;
  };
  return {
    read,
    fill: (target, path, variable, convert = (text) => text) => {
      const text = read(variable);
      const key = path.slice(path.lastIndexOf('.') + 1);
      if (target[key] !== undefined || text === undefined) return;
      target[key] = convert(text);
      sources.set(path, variable);
    },
    note: (path, variable) => sources.set(path, variable),
  };
}

function rootFromEnvironment(result: Record<string, unknown>, from: EnvironmentReader): string[] {
  from.fill(result, 'group', ENV.group);
  from.fill(result, 'partialBatchResponse', ENV.partialBatchResponse, parseBoolean);
  from.fill(result, 'eventRecordFormat', ENV.eventRecordFormat, (text) => text.toUpperCase());
  const ordering = from.read(ENV.ordering);
  const problems: string[] = [];
  if (result['ordering'] !== undefined && ordering !== undefined && result['ordering'] !== ordering) {
    // The committer has no code of the handler: it rebuilds lanes after a loss (docs/durability.md) by this value.
    problems.push(
      `Invalid kafka-lanes option \`ordering\`: expected the same value in code and in \`${ENV.ordering}\` (the committer ` +
        `rebuilds lanes by it after a loss; with the serverless plugin, set it in serverless.yml: \`kafkaLanes: { ordering }\`), ` +
        `got \`${String(result['ordering'])}\` in code and \`${ordering}\` from the environment`,
    );
  }
  from.fill(result, 'ordering', ENV.ordering);
  return problems;
}

/** `retry.tiers` and `deadLetter.policy`: the deployment's, which the committer and the retry triggers follow. */
function deployedFromEnvironment(result: Record<string, unknown>, from: EnvironmentReader): string[] {
  const problems: string[] = [];
  const retry = nested(result, 'retry');
  if (retry !== undefined) {
    problems.push(...deployedElsewhere(retry['tiers'], { option: 'retry.tiers', variable: ENV.retryTiers, blockKey: 'retryTiers: [...]' }, from));
    from.fill(retry, 'retry.tiers', ENV.retryTiers, splitList);
  }
  const deadLetter = nested(result, 'deadLetter');
  if (deadLetter !== undefined) {
    problems.push(...deployedElsewhere(deadLetter['policy'], { option: 'deadLetter.policy', variable: ENV.deadLetterPolicy, blockKey: 'deadLetter: { policy }' }, from));
    from.fill(deadLetter, 'deadLetter.policy', ENV.deadLetterPolicy);
  }
  return problems;
}

function redisFromEnvironment(redis: Record<string, unknown> | undefined, from: EnvironmentReader): string[] {
  if (redis === undefined) return [];
  const problems: string[] = [];
  if (redis['url'] === undefined && redis['clusterNodes'] === undefined) {
    if (from.read(ENV.redisUrl) !== undefined && from.read(ENV.redisClusterNodes) !== undefined) {
      // Deploy tooling set two connections; using one silently would hide which Redis the done bits went to.
      problems.push(
        `Invalid kafka-lanes option \`redis\` (from environment variables): expected \`${ENV.redisUrl}\` (one server) ` +
          `or \`${ENV.redisClusterNodes}\` (a cluster), got both`,
      );
    } else {
      from.fill(redis, 'redis.url', ENV.redisUrl);
      from.fill(redis, 'redis.clusterNodes', ENV.redisClusterNodes, splitList);
    }
  }
  from.fill(redis, 'redis.tls', ENV.redisTls, parseBoolean);
  from.fill(redis, 'redis.username', ENV.redisUsername);
  if (redis['password'] === undefined && redis['passwordSecret'] === undefined) {
    if (from.read(ENV.redisAuthToken) !== undefined && from.read(ENV.redisAuthSecret) !== undefined) {
      problems.push(
        `Invalid kafka-lanes option \`redis.password\` (from environment variables): expected \`${ENV.redisAuthToken}\` (the token) ` +
          `or \`${ENV.redisAuthSecret}\` (where it is kept), not both, got both`,
      );
    } else {
      from.fill(redis, 'redis.password', ENV.redisAuthToken);
      from.fill(redis, 'redis.passwordSecret', ENV.redisAuthSecret);
    }
  }
  return problems;
}

function kafkaFromEnvironment(kafka: Record<string, unknown> | undefined, from: EnvironmentReader): string[] {
  if (kafka === undefined) return [];
  from.fill(kafka, 'kafka.brokers', ENV.brokers, splitList);
  from.fill(kafka, 'kafka.ssl', ENV.ssl, parseBoolean);
  from.fill(kafka, 'kafka.mskClusterArn', ENV.mskClusterArn);
  if (kafka['sasl'] !== undefined) return [];
  if (from.read(ENV.saslSecret) !== undefined) return saslSecretFromEnvironment(kafka, from);
  const variables = [ENV.saslMechanism, ENV.saslUsername, ENV.saslPassword];
  const set = variables.filter((variable) => from.read(variable) !== undefined);
  if (from.read(ENV.saslMechanism)?.toLowerCase() === AWS_IAM_MECHANISM) {
    kafka['sasl'] = { mechanism: AWS_IAM_MECHANISM };
    from.note('kafka.sasl', ENV.saslMechanism);
    if (set.length === 1) return [];
    return [
      `Invalid kafka-lanes option \`kafka.sasl\` (from environment variables): expected no username or password with ` +
        `\`${ENV.saslMechanism}=aws-iam\` (MSK IAM signs with the function's AWS credentials), got ` +
        `${set.filter((variable) => variable !== ENV.saslMechanism).map((variable) => `\`${variable}\``).join(', ')}`,
    ];
  }
  if (set.length === variables.length) {
    kafka['sasl'] = { mechanism: from.read(ENV.saslMechanism)?.toLowerCase(), username: from.read(ENV.saslUsername), password: from.read(ENV.saslPassword) };
    from.note('kafka.sasl.mechanism', ENV.saslMechanism);
    from.note('kafka.sasl.username', ENV.saslUsername);
    from.note('kafka.sasl.password', ENV.saslPassword);
    return [];
  }
  if (set.length === 0) return [];
  return [
    `Invalid kafka-lanes option \`kafka.sasl\` (from environment variables): expected all three of ` +
      `${variables.map((variable) => `\`${variable}\``).join(', ')} or none, got only ${set.map((variable) => `\`${variable}\``).join(', ')}`,
  ];
}

/** `kafka.sasl` from `KAFKA_LANES_SASL_SECRET` and the mechanism (default `scram-sha-512`, MSK's only SCRAM). */
function saslSecretFromEnvironment(kafka: Record<string, unknown>, from: EnvironmentReader): string[] {
  const mechanism = from.read(ENV.saslMechanism)?.toLowerCase();
  const withSecret = [ENV.saslUsername, ENV.saslPassword].filter((variable) => from.read(variable) !== undefined);
  if (withSecret.length > 0 || mechanism === AWS_IAM_MECHANISM) {
    const given = mechanism === AWS_IAM_MECHANISM ? [`\`${ENV.saslMechanism}=aws-iam\``] : withSecret.map((variable) => `\`${variable}\``);
    return [
      `Invalid kafka-lanes option \`kafka.sasl\` (from environment variables): expected \`${ENV.saslSecret}\` alone (the secret holds ` +
        `the username and password) or with \`${ENV.saslMechanism}\` of a password mechanism, got it with ${given.join(', ')}`,
    ];
  }
  kafka['sasl'] = { mechanism: mechanism ?? 'scram-sha-512', secret: from.read(ENV.saslSecret) };
  if (mechanism !== undefined) from.note('kafka.sasl.mechanism', ENV.saslMechanism);
  from.note('kafka.sasl.secret', ENV.saslSecret);
  return [];
}

/**
 * An option given in code that the deployment also sets, to another value: the committer (re-drives) and the
 * retry triggers follow the deployment, so a handler following its code would strand lanes (a copy written to a
 * tier nothing reads). Such options belong to the `kafkaLanes` block of serverless.yml, where both get them.
 */
function deployedElsewhere(given: unknown, deployed: { option: string; variable: string; blockKey: string }, from: EnvironmentReader): string[] {
  const value = from.read(deployed.variable);
  if (given === undefined || value === undefined) return [];
  const inCode = Array.isArray(given) ? given.map(String) : [String(given)];
  const fromDeployment = Array.isArray(given) ? splitList(value) : [value];
  if (inCode.join(',') === fromDeployment.join(',')) return [];
  return [
    `Invalid kafka-lanes option \`${deployed.option}\`: expected it in serverless.yml (\`kafkaLanes: { ${deployed.blockKey} }\`), not in code, ` +
      `since the committer and the retry triggers read the deployment's value \`${fromDeployment.join(',')}\` (\`${deployed.variable}\`); got \`${inCode.join(',')}\` in code`,
  ];
}

/** A copy of `parent[key]` put in its place, `{}` if it was absent; `undefined` if it is not an object. */
function nested(parent: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const value = parent[key] === undefined ? {} : parent[key];
  if (!isPlainObject(value)) return undefined;
  const copy = { ...value };
  parent[key] = copy;
  return copy;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `a:1, b:2,` -> `['a:1', 'b:2']`: entries trimmed, empty ones dropped (as the event's `bootstrapServers`). */
function splitList(text: string): string[] {
  return text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** `true` / `false` in any case; anything else stays a string, for the schema to reject with the variable named. */
function parseBoolean(text: string): boolean | string {
  const normal = text.trim().toLowerCase();
  return normal === 'true' ? true : normal === 'false' ? false : text;
}
