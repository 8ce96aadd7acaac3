import type { KafkaConfig, OauthbearerProviderResponse, SASLOptions } from 'kafkajs';
import { ConfigError } from '../errors';
import type { KafkaOptions, SaslOptions } from '../options/lanes-options';
import { commonJsExports } from './interop';
import { mskBootstrapBrokers, mskListener, type GetBootstrapBrokers } from './msk';
import { withKafkaSecret, type SecretDeps } from './secrets';

/** Signs an MSK IAM token for a region; replaceable in tests. */
export type SignIamToken = (region: string) => Promise<{ token: string; expiryTime: number }>;

const signWithDefaultCredentials: SignIamToken = async (region) => {
  // Loaded on first use: only functions using MSK IAM pay for the signer and its credential chain.
  const { generateAuthToken } = commonJsExports(await import('aws-msk-iam-sasl-signer-js'), 'generateAuthToken');
  return generateAuthToken({ region });
};

/** The parts of a kafkajs client config the connection options decide. */
export type KafkaConnectionConfig = Pick<KafkaConfig, 'clientId' | 'brokers' | 'ssl' | 'sasl'>;

export interface KafkaConnectionDeps extends SecretDeps {
  readonly getBootstrapBrokers?: GetBootstrapBrokers;
  readonly signIamToken?: SignIamToken;
}

/**
 * The kafkajs SASL options: a username and password as given, or MSK IAM as OAUTHBEARER whose token is signed
 * with the process's AWS credentials (the Lambda role) each time kafkajs authenticates a connection.
 *
 * @example
 * saslConfig({ mechanism: 'aws-iam', region: 'eu-west-1' }); // { mechanism: 'oauthbearer', oauthBearerProvider }
 */
export function saslConfig(sasl: SaslOptions, sign: SignIamToken = signWithDefaultCredentials): SASLOptions {
  if (sasl.mechanism === 'aws-iam') {
    const { region } = sasl;
    return {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async (): Promise<OauthbearerProviderResponse> => ({ value: (await sign(region)).token }),
    };
  }
  if ('secret' in sasl) {
    // kafkajs takes the credentials as values: the secret is read first (`kafkaClientConfig`).
    throw new ConfigError(`Expected the SASL credentials of \`kafka.sasl.secret\` to be read before the Kafka client is made (kafkaClientConfig), got the reference \`${sasl.secret}\``);
  }
  return { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
}

/**
 * The connection part of a kafkajs config for every client the framework opens (hand-off producer,
 * committer, CLI): brokers from the options, else from the MSK cluster ARN (resolved once per cold start,
 * when kafkajs first connects), else `fallbackBrokers` (the event's `bootstrapServers`); TLS and SASL as
 * resolved by `resolveOptions`.
 *
 * @throws ConfigError when no brokers are known.
 * @example
 * const kafka = new Kafka({ ...kafkaConnectionConfig(options.kafka, event.bootstrapServers.split(',')), logLevel: logLevel.ERROR });
 */
export function kafkaConnectionConfig(
  kafka: KafkaOptions,
  fallbackBrokers: readonly string[] = [],
  deps: KafkaConnectionDeps = {},
): KafkaConnectionConfig {
  let brokers: KafkaConfig['brokers'];
  if (kafka.brokers.length > 0) brokers = [...kafka.brokers];
  else if (kafka.mskClusterArn !== undefined) {
    const arn = kafka.mskClusterArn;
    const listener = mskListener(kafka);
    brokers = () => mskBootstrapBrokers(arn, listener, deps.getBootstrapBrokers);
  } else if (fallbackBrokers.length > 0) brokers = [...fallbackBrokers];
  else {
    throw new ConfigError(
      'Expected Kafka brokers: `kafka.brokers` (or KAFKA_LANES_BROKERS), `kafka.mskClusterArn` (or KAFKA_LANES_MSK_CLUSTER_ARN), ' +
        "or the event's bootstrapServers; got none",
    );
  }
  return {
    clientId: kafka.clientId,
    brokers,
    ssl: kafka.ssl,
    ...(kafka.sasl === undefined ? {} : { sasl: saslConfig(kafka.sasl, deps.signIamToken) }),
  };
}

/**
 * `kafkaConnectionConfig` once the SASL credentials a secret keeps are read (at the first client of the process,
 * then from memory): what every Kafka client of the framework is made with.
 *
 * @throws ConfigError when no brokers are known or the secret is malformed; LanesError (retriable) when it cannot be read.
 * @example
 * const kafka = new Kafka({ ...(await kafkaClientConfig(options.kafka, bootstrapServers)), logLevel: logLevel.ERROR });
 */
export async function kafkaClientConfig(
  kafka: KafkaOptions,
  fallbackBrokers: readonly string[] = [],
  deps: KafkaConnectionDeps = {},
): Promise<KafkaConnectionConfig> {
  return kafkaConnectionConfig(await withKafkaSecret(kafka, deps), fallbackBrokers, deps);
}

/** A short id of where a config's brokers come from, to reuse one client per cluster. */
export function brokersId(kafka: KafkaOptions, fallbackBrokers: readonly string[] = []): string {
  if (kafka.brokers.length > 0) return kafka.brokers.join(',');
  if (kafka.mskClusterArn !== undefined) return kafka.mskClusterArn;
  return fallbackBrokers.join(',');
}
