import { ConfigError, LanesError } from '../errors';
import { ENV } from '../options/constants';
import type { KafkaOptions, PasswordMechanism, RedisOptions } from '../options/lanes-options';
import { parseSecretRef, type SecretRef, type SecretStore } from '../options/secret-ref';
import { commonJsExports } from './interop';

/**
 * Secrets read when the first connection needs them, once per process (a Lambda execution environment): only a
 * reference (a Secrets Manager secret or an SSM SecureString parameter) is in the options and the environment,
 * the value lives in the connection config alone and is never logged. A failed read is forgotten, so the next
 * connection attempt reads again; a read that succeeded is kept for the life of the process.
 */

/** Reads the text of a secret: a Secrets Manager `SecretString`, an SSM parameter's decrypted value. */
export type ReadSecret = (ref: SecretRef) => Promise<string>;

/** Where the AWS SDK clients send their calls, for tests (an emulator) or a VPC endpoint with its own name. */
export interface SecretClientConfig {
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
}

export interface SecretDeps {
  readonly readSecret?: ReadSecret;
}

/**
 * A `ReadSecret` through the AWS SDK: `GetSecretValue`, or `GetParameter` with decryption. The clients load on the
 * first read, so a function without secrets never pays for them. The region is the ARN's, else `AWS_REGION`.
 *
 * @example
 * const read = awsSecretReader({ endpoint: 'http://127.0.0.1:4566', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
 */
export function awsSecretReader(config: SecretClientConfig = {}): ReadSecret {
  return async (ref) => {
    const region = ref.region ?? config.region;
    const client = { ...config, ...(region === undefined ? {} : { region }) };
    if (ref.store === 'secretsmanager') {
      const sdk = commonJsExports(await import('@aws-sdk/client-secrets-manager'), 'SecretsManagerClient');
      const manager = new sdk.SecretsManagerClient(client);
      try {
        const answer = await manager.send(new sdk.GetSecretValueCommand({ SecretId: ref.id }));
        if (answer.SecretString === undefined) throw new ConfigError(`Expected a text secret (SecretString), got a binary one (SecretBinary)`);
        return answer.SecretString;
      } finally {
        manager.destroy();
      }
    }
    const sdk = commonJsExports(await import('@aws-sdk/client-ssm'), 'SSMClient');
    const ssm = new sdk.SSMClient(client);
    try {
      const answer = await ssm.send(new sdk.GetParameterCommand({ Name: ref.name, WithDecryption: true }));
      const value = answer.Parameter?.Value;
      if (value === undefined) throw new ConfigError('Expected the parameter to have a value, got none');
      return value;
    } finally {
      ssm.destroy();
    }
  };
}

const defaultReader = awsSecretReader();
const cache = new WeakMap<ReadSecret, Map<string, Promise<string>>>();

/** A setting of a secret reference, as messages name it: the option and the environment variable. */
interface Setting {
  readonly option: string;
  readonly variable: string;
  readonly stores: readonly SecretStore[];
}

const SETTINGS = {
  sasl: { option: 'kafka.sasl.secret', variable: ENV.saslSecret, stores: ['secretsmanager'] },
  redis: { option: 'redis.passwordSecret', variable: ENV.redisAuthSecret, stores: ['secretsmanager', 'ssm'] },
} as const satisfies Record<string, Setting>;

function named(setting: Setting, reference: string): string {
  return `the secret \`${reference}\` of \`${setting.option}\` (${setting.variable})`;
}

/** The text of the secret `reference` names, read once per process and reader. */
function readOnce(setting: Setting, reference: string, read: ReadSecret): Promise<string> {
  const ref = parseSecretRef(reference, setting.stores);
  if ('problem' in ref) return Promise.reject(new ConfigError(`Cannot read ${named(setting, reference)}: ${ref.problem}`));
  let texts = cache.get(read);
  if (texts === undefined) cache.set(read, (texts = new Map()));
  const id = JSON.stringify(ref);
  let text = texts.get(id);
  if (text === undefined) {
    text = read(ref).catch((error: unknown) => {
      // The SDK's message names the failure (AccessDenied, ResourceNotFound, a timeout), never the value.
      const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new LanesError(`Cannot read ${named(setting, reference)}: ${why}`, { retriable: !(error instanceof ConfigError), cause: error });
    });
    texts.set(id, text);
    const current = text;
    // A failure is not kept: the next connection attempt reads again.
    current.catch(() => texts.get(id) === current && texts.delete(id));
  }
  return text;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The SASL username and password kept in a Secrets Manager secret as JSON `{ "username", "password" }` (the form
 * MSK SCRAM secrets take).
 *
 * @throws ConfigError naming the secret and the setting when the secret is not such JSON (its value never shown);
 *   LanesError (retriable) when it cannot be read.
 */
export async function saslCredentials(
  sasl: { readonly mechanism: PasswordMechanism; readonly secret: string },
  deps: SecretDeps = {},
): Promise<{ mechanism: PasswordMechanism; username: string; password: string }> {
  const text = await readOnce(SETTINGS.sasl, sasl.secret, deps.readSecret ?? defaultReader);
  const fields = parseObject(text);
  if (fields === undefined || !nonEmpty(fields['username']) || !nonEmpty(fields['password'])) {
    const shape = fields === undefined ? 'not a JSON object' : `a JSON object with the keys ${Object.keys(fields).map((key) => `\`${key}\``).join(', ') || 'none'}`;
    throw new ConfigError(`Expected ${named(SETTINGS.sasl, sasl.secret)} to hold JSON \`{ "username": "...", "password": "..." }\` (non-empty strings), got ${shape}`);
  }
  return { mechanism: sasl.mechanism, username: fields['username'], password: fields['password'] };
}

/**
 * The Redis options with the AUTH token read from `passwordSecret`: the secret's text is the token, or JSON with
 * `token` or `password` (and optionally `username`, used when the options name no user). Without
 * `passwordSecret`, the options as they are.
 *
 * @throws ConfigError naming the secret and the setting when it is malformed; LanesError (retriable) when unreadable.
 */
export async function withRedisSecret(redis: RedisOptions, deps: SecretDeps = {}): Promise<RedisOptions> {
  const reference = redis.passwordSecret;
  if (reference === undefined) return redis;
  const text = await readOnce(SETTINGS.redis, reference, deps.readSecret ?? defaultReader);
  const { passwordSecret: _reference, ...rest } = redis;
  const fields = parseObject(text);
  if (fields === undefined) {
    if (text === '') throw new ConfigError(`Expected ${named(SETTINGS.redis, reference)} to hold the AUTH token, got an empty text`);
    return { ...rest, password: text };
  }
  const tokens = (['token', 'password'] as const).filter((key) => fields[key] !== undefined);
  const token = tokens.length === 1 ? fields[tokens[0]!] : undefined;
  if (!nonEmpty(token) || (fields['username'] !== undefined && !nonEmpty(fields['username']))) {
    throw new ConfigError(
      `Expected ${named(SETTINGS.redis, reference)} to hold the AUTH token as text, or JSON with one of \`token\` or \`password\` ` +
        `(non-empty strings) and optionally \`username\`, got a JSON object with the keys ${Object.keys(fields).map((key) => `\`${key}\``).join(', ') || 'none'}`,
    );
  }
  const username = rest.username ?? (nonEmpty(fields['username']) ? fields['username'] : undefined);
  return { ...rest, password: token, ...(username === undefined ? {} : { username }) };
}

/** The Kafka options with SASL credentials read from their secret, if they name one. */
export async function withKafkaSecret(kafka: KafkaOptions, deps: SecretDeps = {}): Promise<KafkaOptions> {
  const sasl = kafka.sasl;
  if (sasl === undefined || !('secret' in sasl)) return kafka;
  return { ...kafka, sasl: await saslCredentials(sasl, deps) };
}

/** Forgets every secret read (tests). */
export function clearSecretCache(): void {
  cache.delete(defaultReader);
}
