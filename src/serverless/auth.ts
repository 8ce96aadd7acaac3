import { isObject } from '../describe';
import { ENV } from '../options/constants';
import type { PasswordMechanism } from '../options/lanes-options';
import { parseSecretRef, secretRefExpected, type SecretStore } from '../options/secret-ref';
import type { FunctionBlock } from './config';
import type { KafkaAuth } from './types';

// How a group's producers and committer authenticate, decided at `serverless package` from the trigger and the
// block; secrets travel as references only (the functions read them at cold start, src/connections/secrets.ts). Pure.

/** The auth of a group's Kafka clients, with the SASL secret (a reference: an ARN, a name or a CloudFormation value). */
export interface ResolvedKafkaAuth {
  readonly auth: KafkaAuth;
  readonly sasl?: { readonly mechanism: PasswordMechanism; readonly secret: unknown };
}

/** A trigger's SASL secrets by mechanism: an `msk` trigger's `saslScram512`, a `kafka` trigger's `accessConfigurations`. */
const SELF_MANAGED_SASL: ReadonlyArray<[string, PasswordMechanism]> = [
  ['saslScram512Auth', 'scram-sha-512'],
  ['saslScram256Auth', 'scram-sha-256'],
  ['saslPlainAuth', 'plain'],
];

/** The SASL secret the trigger itself authenticates with, if any. */
function triggerSasl(kind: 'msk' | 'kafka', settings: Record<string, unknown>): ResolvedKafkaAuth['sasl'] {
  if (kind === 'msk') return settings['saslScram512'] === undefined ? undefined : { mechanism: 'scram-sha-512', secret: settings['saslScram512'] };
  const access = isObject(settings['accessConfigurations']) ? settings['accessConfigurations'] : {};
  for (const [key, mechanism] of SELF_MANAGED_SASL) {
    const given = access[key];
    const secret = Array.isArray(given) ? given[0] : given;
    if (secret !== undefined) return { mechanism, secret };
  }
  return undefined;
}

/**
 * The auth the trigger uses unless the block says otherwise (`kafka.auth`), and for `scram` the secret: the block's
 * `kafka.secret`, else the trigger's own. Or why the producers could not follow it.
 *
 * @example
 * resolveKafkaAuth('functions.orders', 'msk', { arn, topic: 'orders', saslScram512: secretArn }, {});
 * // { auth: 'scram', sasl: { mechanism: 'scram-sha-512', secret: secretArn } }
 */
export function resolveKafkaAuth(where: string, kind: 'msk' | 'kafka', settings: Record<string, unknown>, block: FunctionBlock): ResolvedKafkaAuth | { problems: string[] } {
  const at = `${where}.kafkaLanes.kafka`;
  const access = isObject(settings['accessConfigurations']) ? settings['accessConfigurations'] : {};
  const fromTrigger = triggerSasl(kind, settings);
  const given = block.kafka?.auth;
  const secret = block.kafka?.secret;
  const triggerUses: KafkaAuth =
    fromTrigger !== undefined ? 'scram' : kind === 'msk' ? 'iam' : access['serverRootCaCertificate'] !== undefined || access['clientCertificateTlsAuth'] !== undefined ? 'tls' : 'none';
  const auth = given ?? (secret !== undefined ? 'scram' : triggerUses);
  if (auth === 'iam' && kind === 'kafka') return { problems: [`${at}.auth: expected \`scram\`, \`tls\` or \`none\` for a self-managed \`kafka\` trigger (MSK IAM needs an \`msk\` trigger), got \`iam\``] };
  if (auth !== 'scram' && secret !== undefined) {
    return { problems: [`${at}.secret: expected no secret with \`kafka.auth: ${auth}\` (the secret holds a SCRAM username and password), got ${JSON.stringify(secret)}`] };
  }
  if (auth === 'scram') {
    const chosen = secret ?? fromTrigger?.secret;
    if (chosen === undefined) {
      return {
        problems: [
          `${at}.secret: expected the Secrets Manager secret holding the SCRAM username and password of the producers and the committer ` +
            `(\`kafka.auth: scram\`; the trigger has no \`${kind === 'msk' ? 'saslScram512' : 'accessConfigurations.saslScram512Auth'}\` to take it from), got none`,
        ],
      };
    }
    const problem = secretProblem(secret === undefined ? `${where}.events.${kind}` : `${at}.secret`, chosen, ['secretsmanager']);
    if (problem !== undefined) return { problems: [problem] };
    return { auth, sasl: { mechanism: fromTrigger?.mechanism ?? 'scram-sha-512', secret: chosen } };
  }
  if (kind === 'kafka' && access['clientCertificateTlsAuth'] !== undefined && given === undefined) {
    return { problems: [`${at}.auth: expected \`tls\` or \`none\` set explicitly: the trigger authenticates with a client certificate (mTLS), which the producers and the committer do not use`] };
  }
  return { auth };
}

/** Why a secret reference names no secret of `stores`; a CloudFormation value (a Secrets Manager ARN at deploy) passes. */
export function secretProblem(setting: string, value: unknown, stores: readonly SecretStore[]): string | undefined {
  if (typeof value !== 'string') return undefined;
  const ref = parseSecretRef(value, stores);
  return 'problem' in ref ? `${setting}: expected ${secretRefExpected(stores)}, got \`${value}\` (${ref.problem})` : undefined;
}

/** The group's secret references as the functions get them: never a value. */
export function secretEnvironment(resolved: ResolvedKafkaAuth, block: FunctionBlock): Record<string, unknown> {
  const environment: Record<string, unknown> = {};
  if (resolved.sasl !== undefined) {
    environment[ENV.saslMechanism] = resolved.sasl.mechanism;
    environment[ENV.saslSecret] = resolved.sasl.secret;
    // MSK offers SCRAM on its TLS listener only; Lambda reads a self-managed cluster with SASL over TLS only.
    environment[ENV.ssl] = 'true';
  }
  if (block.redis?.authSecret !== undefined) environment[ENV.redisAuthSecret] = block.redis.authSecret;
  return environment;
}

/** Secrets in plain environment variables, and the reference that replaces each. */
const PLAINTEXT: ReadonlyArray<{ variable: string; reference: string; setting: string }> = [
  { variable: ENV.redisAuthToken, reference: ENV.redisAuthSecret, setting: 'kafkaLanes.redis.authSecret' },
  { variable: ENV.saslPassword, reference: ENV.saslSecret, setting: 'kafkaLanes.kafka.secret (with kafka.auth: scram)' },
];

/**
 * A secret given as a plain environment variable of a group's function (its own or the provider's): a problem when
 * the block also names where it is kept (every cold start would refuse both), else a warning outside `serverless
 * offline` (the value is readable by whoever may read the function's configuration).
 */
export function plaintextSecrets(
  functionKey: string,
  environment: Readonly<Record<string, unknown>>,
  planned: Readonly<Record<string, unknown>>,
): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  for (const { variable, reference, setting } of PLAINTEXT) {
    const value = environment[variable];
    if (value === undefined || value === '') continue;
    if (planned[reference] !== undefined) {
      problems.push(`functions.${functionKey}.environment.${variable}: expected no plain value beside \`${setting}\` (the functions read it from there), got one`);
    } else {
      warnings.push(
        `kafka-lanes: functions.${functionKey} gets ${variable} as a plain environment variable, readable by whoever may read the ` +
          `function's configuration; \`${setting}\` keeps only a reference there and the value is read at cold start`,
      );
    }
  }
  return { problems, warnings };
}
