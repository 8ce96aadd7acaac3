import type { GetBootstrapBrokersResponse } from '@aws-sdk/client-kafka';
import { ConfigError, LanesError } from '../errors';
import { commonJsExports } from './interop';
import type { KafkaOptions } from '../options/lanes-options';

/**
 * An MSK cluster ARN turned into bootstrap brokers through `GetBootstrapBrokers`, once per cold start: the
 * answer is cached per ARN for the life of the process (a Lambda execution environment), and a failed call is
 * forgotten so that the next connection attempt asks again.
 */

/** Which of the cluster's listeners the framework's clients use, from the SASL and TLS options. */
export type MskListener = 'iam' | 'scram' | 'tls' | 'plaintext';

/** The fields of `GetBootstrapBrokers` per listener (private VPC addresses: where a Lambda function runs). */
const FIELDS: Readonly<Record<MskListener, keyof GetBootstrapBrokersResponse>> = {
  iam: 'BootstrapBrokerStringSaslIam',
  scram: 'BootstrapBrokerStringSaslScram',
  tls: 'BootstrapBrokerStringTls',
  plaintext: 'BootstrapBrokerString',
};

/** The listener the Kafka options ask for. */
export function mskListener(kafka: Pick<KafkaOptions, 'sasl' | 'ssl'>): MskListener {
  if (kafka.sasl?.mechanism === 'aws-iam') return 'iam';
  if (kafka.sasl?.mechanism === 'scram-sha-256' || kafka.sasl?.mechanism === 'scram-sha-512') return 'scram';
  if (kafka.sasl?.mechanism === 'plain') throw new ConfigError("Expected `scram-sha-512` or `aws-iam` SASL with an MSK cluster, got `plain` (MSK offers no SASL/PLAIN)");
  return kafka.ssl ? 'tls' : 'plaintext';
}

/**
 * The brokers of one listener in a `GetBootstrapBrokers` answer.
 *
 * @throws ConfigError when the cluster has no such listener, naming the ones it has.
 * @example
 * pickBootstrapBrokers({ BootstrapBrokerStringSaslIam: 'b-1.x:9098,b-2.x:9098' }, 'iam', arn); // ['b-1.x:9098', 'b-2.x:9098']
 */
export function pickBootstrapBrokers(response: GetBootstrapBrokersResponse, listener: MskListener, arn: string): string[] {
  const text = response[FIELDS[listener]];
  const brokers = typeof text === 'string' ? text.split(',').map((broker) => broker.trim()).filter((broker) => broker !== '') : [];
  if (brokers.length > 0) return brokers;
  const offered = (Object.keys(FIELDS) as MskListener[]).filter((other) => typeof response[FIELDS[other]] === 'string' && response[FIELDS[other]] !== '');
  throw new ConfigError(
    `Expected MSK cluster ${arn} to offer ${listener === 'plaintext' ? 'plaintext' : listener.toUpperCase()} client access ` +
      `(${FIELDS[listener]}), it offers ${offered.length === 0 ? 'none in this VPC' : offered.map((name) => name.toUpperCase()).join(', ')}: ` +
      'set `kafka.sasl` / `kafka.ssl` (or KAFKA_LANES_SASL_MECHANISM / KAFKA_LANES_KAFKA_SSL) to one of them',
  );
}

/** Calls `GetBootstrapBrokers`; replaceable in tests. */
export type GetBootstrapBrokers = (arn: string, region: string) => Promise<GetBootstrapBrokersResponse>;

/**
 * `GetBootstrapBrokers` through MSK's regional IPv4 endpoint, `kafka.<region>.amazonaws.com` (the one AWS General
 * Reference, "Amazon Managed Streaming for Apache Kafka endpoints and quotas", lists for every region), unless the
 * SDK's own setting asks for dual-stack (`AWS_USE_DUALSTACK_ENDPOINT=true`, or `use_dualstack_endpoint` in the
 * profile: AWS SDKs and Tools reference guide, "Dual-stack and FIPS endpoints"). An endpoint given in the
 * environment (`AWS_ENDPOINT_URL_KAFKA`, an emulator) is used as given.
 */
export const getBootstrapBrokersFromAws: GetBootstrapBrokers = async (arn, region) => {
  // Loaded on first use: only functions configured with an ARN pay for the SDK client at cold start.
  const { KafkaClient, GetBootstrapBrokersCommand } = commonJsExports(await import('@aws-sdk/client-kafka'), 'KafkaClient');
  const client = new KafkaClient({ region });
  try {
    return await client.send(new GetBootstrapBrokersCommand({ ClusterArn: arn }));
  } finally {
    client.destroy();
  }
};

const cache = new Map<string, Promise<string[]>>();

/** The region of an MSK cluster ARN. */
export function regionOfArn(arn: string): string {
  const region = arn.split(':')[3];
  if (region === undefined || region === '') throw new ConfigError(`Expected an MSK cluster ARN like \`arn:aws:kafka:eu-west-1:123456789012:cluster/name/uuid\`, got \`${arn}\``);
  return region;
}

/**
 * The bootstrap brokers of `arn` for `listener`, asked once per process.
 *
 * @example
 * const brokers = await mskBootstrapBrokers('arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abcd', 'iam');
 */
export function mskBootstrapBrokers(arn: string, listener: MskListener, get: GetBootstrapBrokers = getBootstrapBrokersFromAws): Promise<string[]> {
  const id = `${listener}\n${arn}`;
  let brokers = cache.get(id);
  if (brokers === undefined) {
    brokers = get(arn, regionOfArn(arn)).then(
      (response) => pickBootstrapBrokers(response, listener, arn),
      (error: unknown) => {
        throw new LanesError(`GetBootstrapBrokers for MSK cluster ${arn} failed: ${error instanceof Error ? error.message : String(error)}`, {
          retriable: true,
          cause: error,
        });
      },
    );
    cache.set(id, brokers);
    // A failure is not kept: the next connection attempt asks again.
    brokers.catch(() => cache.delete(id));
  }
  return brokers;
}

/** Forgets every cached answer (tests). */
export function clearMskCache(): void {
  cache.clear();
}
