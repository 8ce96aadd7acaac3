import type { GetBootstrapBrokersResponse } from '@aws-sdk/client-kafka';
import { clearMskCache, kafkaClientConfig, kafkaConnectionConfig, withRedisSecret, type ReadSecret } from '../../../src/connections';
import { ConfigError, LanesError } from '../../../src/errors';
import type { KafkaOptions, RedisOptions } from '../../../src/options/lanes-options';
import type { SecretRef } from '../../../src/options/secret-ref';

const SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:shop-kafka-AbCdEf';
const CLUSTER = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const kafka = (overrides: Partial<KafkaOptions> = {}): KafkaOptions => ({ brokers: [], clientId: 'kafka-lanes', ssl: true, ...overrides });
const redis = (overrides: Partial<RedisOptions> = {}): RedisOptions => ({ url: 'redis://cache:6379', clusterNodes: [], ...overrides });

/** A fetcher answering from a table, recording every read. */
function reader(texts: Record<string, string | Error>): ReadSecret & { reads: SecretRef[] } {
  const reads: SecretRef[] = [];
  const read = async (ref: SecretRef): Promise<string> => {
    reads.push(ref);
    const text = texts[ref.store === 'ssm' ? ref.name : ref.id];
    if (text === undefined) throw Object.assign(new Error('Secrets Manager can\'t find the specified secret.'), { name: 'ResourceNotFoundException' });
    if (text instanceof Error) throw text;
    return text;
  };
  return Object.assign(read, { reads });
}

beforeEach(() => clearMskCache());

describe('kafkaClientConfig with a SASL secret', () => {
  it('reads the SCRAM username and password from the secret into the kafkajs config, once per process', async () => {
    // Prepare
    const readSecret = reader({ [SECRET]: JSON.stringify({ username: 'lanes', password: 'p4ss' }) });
    const options = kafka({ brokers: ['b-1.shop.internal:9096'], sasl: { mechanism: 'scram-sha-512', secret: SECRET } });

    // Act
    const [first, second] = await Promise.all([kafkaClientConfig(options, [], { readSecret }), kafkaClientConfig(options, [], { readSecret })]);
    const third = await kafkaClientConfig(options, [], { readSecret });

    // Assess
    expect(first).toEqual({ clientId: 'kafka-lanes', brokers: ['b-1.shop.internal:9096'], ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'lanes', password: 'p4ss' } });
    expect(second).toEqual(first);
    expect(third).toEqual(first);
    expect(readSecret.reads).toEqual([{ store: 'secretsmanager', id: SECRET, region: 'eu-west-1' }]);
  });

  it('asks MSK for the SCRAM listener of the cluster', async () => {
    // Prepare
    const readSecret = reader({ [SECRET]: '{"username":"lanes","password":"p4ss"}' });
    const answer: GetBootstrapBrokersResponse = { BootstrapBrokerStringSaslIam: 'b-1:9098', BootstrapBrokerStringSaslScram: 'b-1:9096,b-2:9096' };

    // Act
    const config = await kafkaClientConfig(kafka({ mskClusterArn: CLUSTER, sasl: { mechanism: 'scram-sha-512', secret: SECRET } }), [], {
      readSecret,
      getBootstrapBrokers: async () => answer,
    });

    // Assess
    expect(typeof config.brokers === 'function' ? await config.brokers() : config.brokers).toEqual(['b-1:9096', 'b-2:9096']);
  });

  it('refuses to make a client from the reference alone', () => {
    // Act, Assess
    expect(() => kafkaConnectionConfig(kafka({ brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', secret: SECRET } }))).toThrow(ConfigError);
  });

  it.each([
    ['not JSON', 'lanes:p4ss', 'got not a JSON object'],
    ['JSON without a password', '{"username":"lanes","pass":"p4ss"}', 'got a JSON object with the keys `username`, `pass`'],
    ['an empty username', '{"username":"","password":"p4ss"}', 'got a JSON object with the keys `username`, `password`'],
  ])('names the secret and the setting when it holds %s, never the value', async (_what, text, shape) => {
    // Prepare
    const readSecret = reader({ [SECRET]: text });

    // Act
    const failure = kafkaClientConfig(kafka({ brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', secret: SECRET } }), [], { readSecret });

    // Assess
    await expect(failure).rejects.toThrow(
      `Expected the secret \`${SECRET}\` of \`kafka.sasl.secret\` (KAFKA_LANES_SASL_SECRET) to hold JSON \`{ "username": "...", "password": "..." }\` (non-empty strings), ${shape}`,
    );
    await expect(failure).rejects.not.toThrow(/p4ss/);
  });

  it('names the secret and the failure when it cannot be read, and reads again at the next connection', async () => {
    // Prepare
    const texts: Record<string, string | Error> = { [SECRET]: Object.assign(new Error('User is not authorized to perform: secretsmanager:GetSecretValue'), { name: 'AccessDeniedException' }) };
    const readSecret = reader(texts);
    const options = kafka({ brokers: ['b:9096'], sasl: { mechanism: 'scram-sha-512', secret: SECRET } });

    // Act
    const failure = await kafkaClientConfig(options, [], { readSecret }).catch((error: unknown) => error);
    texts[SECRET] = '{"username":"lanes","password":"p4ss"}';
    const config = await kafkaClientConfig(options, [], { readSecret });

    // Assess
    expect(failure).toBeInstanceOf(LanesError);
    expect((failure as LanesError).retriable).toBe(true);
    expect((failure as Error).message).toBe(
      `Cannot read the secret \`${SECRET}\` of \`kafka.sasl.secret\` (KAFKA_LANES_SASL_SECRET): AccessDeniedException: User is not authorized to perform: secretsmanager:GetSecretValue`,
    );
    expect(config.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'lanes', password: 'p4ss' });
    expect(readSecret.reads).toHaveLength(2);
  });
});

describe('withRedisSecret', () => {
  it.each([
    ['the token as text', 'tok3n-tok3n-tok3n', { password: 'tok3n-tok3n-tok3n' }],
    ['JSON with `token` (infra/aws/redis.yml)', '{"token":"tok3n"}', { password: 'tok3n' }],
    ['JSON with `username` and `password` (an ElastiCache user)', '{"username":"lanes","password":"tok3n"}', { username: 'lanes', password: 'tok3n' }],
  ])('reads %s', async (_what, text, auth) => {
    // Prepare
    const readSecret = reader({ '/shop/redis-token': text });

    // Act
    const resolved = await withRedisSecret(redis({ tls: true, passwordSecret: 'ssm:/shop/redis-token' }), { readSecret });

    // Assess
    expect(resolved).toEqual({ url: 'redis://cache:6379', clusterNodes: [], tls: true, ...auth });
    expect(readSecret.reads).toEqual([{ store: 'ssm', name: '/shop/redis-token' }]);
  });

  it('keeps a username the options give over the secret\'s', async () => {
    // Act
    const resolved = await withRedisSecret(redis({ username: 'ops', passwordSecret: 'shop/redis' }), { readSecret: reader({ 'shop/redis': '{"username":"lanes","password":"tok3n"}' }) });

    // Assess
    expect(resolved).toMatchObject({ username: 'ops', password: 'tok3n' });
  });

  it('leaves options without a secret as they are, reading nothing', async () => {
    // Prepare
    const readSecret = reader({});
    const options = redis({ password: 'given' });

    // Act
    const resolved = await withRedisSecret(options, { readSecret });

    // Assess
    expect(resolved).toBe(options);
    expect(readSecret.reads).toEqual([]);
  });

  it.each([
    ['JSON with neither `token` nor `password`', '{"auth":"tok3n"}', 'got a JSON object with the keys `auth`'],
    ['JSON with both', '{"token":"tok3n","password":"tok3n"}', 'got a JSON object with the keys `token`, `password`'],
  ])('names the secret and the setting when it holds %s, never the value', async (_what, text, shape) => {
    // Act
    const failure = withRedisSecret(redis({ passwordSecret: 'shop/redis' }), { readSecret: reader({ 'shop/redis': text }) });

    // Assess
    await expect(failure).rejects.toThrow(
      'Expected the secret `shop/redis` of `redis.passwordSecret` (KAFKA_LANES_REDIS_AUTH_SECRET) to hold the AUTH token as text, or JSON with one of `token` or `password` ' +
        `(non-empty strings) and optionally \`username\`, ${shape}`,
    );
    await expect(failure).rejects.not.toThrow(/tok3n/);
  });

  it('names a secret that does not exist', async () => {
    // Act
    const failure = withRedisSecret(redis({ passwordSecret: 'shop/missing' }), { readSecret: reader({}) });

    // Assess
    await expect(failure).rejects.toThrow(
      "Cannot read the secret `shop/missing` of `redis.passwordSecret` (KAFKA_LANES_REDIS_AUTH_SECRET): ResourceNotFoundException: Secrets Manager can't find the specified secret.",
    );
  });
});
