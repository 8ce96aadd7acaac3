import type { GetBootstrapBrokersResponse } from '@aws-sdk/client-kafka';
import {
  clearMskCache,
  kafkaConnectionConfig,
  mskBootstrapBrokers,
  mskListener,
  pickBootstrapBrokers,
  redisConnectionConfig,
  regionOfArn,
} from '../../../src/connections';
import { ConfigError } from '../../../src/errors';
import type { KafkaOptions, RedisOptions } from '../../../src/options/lanes-options';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/0a1b2c3d-4e5f-6789-abcd-ef0123456789-2';
const ANSWER: GetBootstrapBrokersResponse = {
  BootstrapBrokerString: 'b-1.orders.kafka.eu-west-1.amazonaws.com:9092,b-2.orders.kafka.eu-west-1.amazonaws.com:9092',
  BootstrapBrokerStringTls: 'b-1.orders.kafka.eu-west-1.amazonaws.com:9094',
  BootstrapBrokerStringSaslIam: 'b-1.orders.kafka.eu-west-1.amazonaws.com:9098,b-2.orders.kafka.eu-west-1.amazonaws.com:9098',
};
const kafka = (overrides: Partial<KafkaOptions> = {}): KafkaOptions => ({ brokers: [], clientId: 'kafka-lanes', ssl: false, ...overrides });

beforeEach(() => clearMskCache());

describe('MSK bootstrap brokers', () => {
  it('picks the listener of the auth in use', () => {
    expect(mskListener({ ssl: true, sasl: { mechanism: 'aws-iam', region: 'eu-west-1' } })).toBe('iam');
    expect(mskListener({ ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } })).toBe('scram');
    expect(mskListener({ ssl: true })).toBe('tls');
    expect(mskListener({ ssl: false })).toBe('plaintext');
    expect(pickBootstrapBrokers(ANSWER, 'iam', ARN)).toEqual([
      'b-1.orders.kafka.eu-west-1.amazonaws.com:9098',
      'b-2.orders.kafka.eu-west-1.amazonaws.com:9098',
    ]);
  });

  it('names the listeners a cluster offers when the one asked for is missing', () => {
    expect(() => pickBootstrapBrokers(ANSWER, 'scram', ARN)).toThrow(ConfigError);
    expect(() => pickBootstrapBrokers(ANSWER, 'scram', ARN)).toThrow(
      `Expected MSK cluster ${ARN} to offer SCRAM client access (BootstrapBrokerStringSaslScram), it offers IAM, TLS, PLAINTEXT`,
    );
  });

  it('asks once per cold start, in the region of the ARN, and asks again after a failure', async () => {
    const calls: string[] = [];
    let fail = true;
    const get = async (arn: string, region: string): Promise<GetBootstrapBrokersResponse> => {
      calls.push(`${region} ${arn}`);
      if (fail) throw new Error('throttled');
      return ANSWER;
    };
    await expect(mskBootstrapBrokers(ARN, 'iam', get)).rejects.toThrow(`GetBootstrapBrokers for MSK cluster ${ARN} failed: throttled`);
    fail = false;
    const [first, second] = await Promise.all([mskBootstrapBrokers(ARN, 'iam', get), mskBootstrapBrokers(ARN, 'iam', get)]);
    await mskBootstrapBrokers(ARN, 'iam', get);
    expect(first).toEqual(second);
    expect(calls).toEqual([`eu-west-1 ${ARN}`, `eu-west-1 ${ARN}`]);
    expect(regionOfArn('arn:aws-cn:kafka:cn-north-1:123456789012:cluster/a/b')).toBe('cn-north-1');
  });
});

describe('kafkaConnectionConfig', () => {
  it('uses the brokers given, else the ARN, else the event', async () => {
    expect(kafkaConnectionConfig(kafka({ brokers: ['k:9092'] }), ['event:9092']).brokers).toEqual(['k:9092']);
    expect(kafkaConnectionConfig(kafka(), ['event:9092']).brokers).toEqual(['event:9092']);
    const fromArn = kafkaConnectionConfig(kafka({ mskClusterArn: ARN, ssl: true }), ['event:9092'], { getBootstrapBrokers: async () => ANSWER }).brokers;
    expect(typeof fromArn === 'function' && (await fromArn())).toEqual(['b-1.orders.kafka.eu-west-1.amazonaws.com:9094']);
    expect(() => kafkaConnectionConfig(kafka())).toThrow('Expected Kafka brokers');
  });

  it('passes SCRAM as is and turns MSK IAM into OAUTHBEARER with a token signed for the region', async () => {
    const scram = kafkaConnectionConfig(kafka({ brokers: ['k:9096'], ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } }));
    expect(scram).toMatchObject({ ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } });

    const regions: string[] = [];
    const iam = kafkaConnectionConfig(kafka({ brokers: ['k:9098'], ssl: true, sasl: { mechanism: 'aws-iam', region: 'eu-west-1' } }), [], {
      signIamToken: async (region) => {
        regions.push(region);
        return { token: `token-${regions.length}`, expiryTime: 0 };
      },
    });
    expect(iam.sasl?.mechanism).toBe('oauthbearer');
    const provider = (iam.sasl as { oauthBearerProvider?: () => Promise<{ value: string }> } | undefined)?.oauthBearerProvider;
    // A new token per authentication: kafkajs asks again when it reconnects or re-authenticates.
    expect(await provider?.()).toEqual({ value: 'token-1' });
    expect(await provider?.()).toEqual({ value: 'token-2' });
    expect(regions).toEqual(['eu-west-1', 'eu-west-1']);
  });
});

describe('redisConnectionConfig', () => {
  const redis = (overrides: Partial<RedisOptions> = {}): RedisOptions => ({ url: 'redis://127.0.0.1:6379', clusterNodes: [], ...overrides });

  it('connects one server with TLS and AUTH when asked', () => {
    expect(redisConnectionConfig(redis(), { connectTimeout: 1 })).toEqual({ kind: 'server', url: 'redis://127.0.0.1:6379', options: { connectTimeout: 1 } });
    expect(redisConnectionConfig(redis({ url: 'rediss://cache:6379', password: 't' }))).toEqual({
      kind: 'server',
      url: 'rediss://cache:6379',
      options: { password: 't', tls: {} },
    });
    expect(redisConnectionConfig(redis({ tls: true, username: 'u', password: 't' })).options).toEqual({ username: 'u', password: 't', tls: {} });
  });

  it('connects an ElastiCache cluster over TLS by host name', () => {
    const config = redisConnectionConfig(
      redis({ clusterNodes: ['clustercfg.orders.abc.euw1.cache.amazonaws.com:6379', '[::1]:7000'], tls: true, password: 't' }),
      { connectTimeout: 1 },
    );
    expect(config.kind).toBe('cluster');
    if (config.kind !== 'cluster') return;
    expect(config.nodes).toEqual([
      { host: 'clustercfg.orders.abc.euw1.cache.amazonaws.com', port: 6379 },
      { host: '::1', port: 7000 },
    ]);
    expect(config.options.redisOptions).toEqual({ connectTimeout: 1, password: 't', tls: {} });
    const resolved: string[] = [];
    config.options.dnsLookup?.('node-1.cache.amazonaws.com', (_, address) => resolved.push(address));
    expect(resolved).toEqual(['node-1.cache.amazonaws.com']);
    expect(redisConnectionConfig(redis({ clusterNodes: ['n:7000'] })).options).toEqual({ redisOptions: {} });
  });
});
