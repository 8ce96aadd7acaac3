/**
 * Secrets read at cold start, over real connections: an HTTP server answers Secrets Manager's `GetSecretValue` and
 * SSM's `GetParameter` as AWS does (JSON 1.1, SigV4-signed requests from the AWS SDK with static test credentials),
 * and a `redis-server` of the test's own requires the AUTH token kept there. The framework reads the token once
 * per process and connects; the token never reaches `process.env` nor the resolved options.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { Redis } from 'ioredis';
import { lanes } from '../../src';
import { awsSecretReader, createRedis } from '../../src/connections';
import { resolveOptions } from '../../src/options';
import { committerHandler } from '../../src/serverless/committer-handler';
import { contextWithin, eventOf, fetchRecords, produce } from './support/kafka-events';
import { startRedis, type RedisServer } from './support/redis-pair';
import { createTopic, KAFKA_BROKERS, uniqueName } from './support/stack';
import { awsEmulator, CREDENTIALS, REGION } from './support/aws-secrets';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const TOKEN = `tok-${randomBytes(16).toString('hex')}`;
const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:123456789012:secret:${uniqueName('redis-auth')}-AbCdEf`;
const PARAMETER = `/${uniqueName('shop')}/redis-token`;

describe('secrets read at cold start', () => {
  let redis: RedisServer;
  let emulator: ReturnType<typeof awsEmulator>;
  let endpoint: string;
  const saved = { ...process.env };

  beforeAll(async () => {
    redis = await startRedis();
    const admin = new Redis({ port: redis.port });
    // Equivalent to `--requirepass`: from now on every connection must AUTH.
    await admin.config('SET', 'requirepass', TOKEN);
    admin.disconnect();
    emulator = awsEmulator({ [SECRET_ARN]: JSON.stringify({ token: TOKEN }) }, { [PARAMETER]: TOKEN });
    await new Promise<void>((resolve) => emulator.server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(emulator.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    redis.process.kill('SIGKILL');
    await new Promise((resolve) => emulator.server.close(resolve));
  });

  afterEach(() => {
    process.env = { ...saved };
  });

  const url = (): string => `redis://127.0.0.1:${redis.port}`;

  it('refuses a connection without the token (the server really requires it)', async () => {
    // Prepare
    const client = await createRedis(resolveOptions({ group: 'g', redis: { url: url() } }, {}).redis, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);

    // Act
    const answer = client.ping().catch((error: unknown) => String(error));

    // Assess
    await expect(answer).resolves.toMatch(/NOAUTH/);
    client.disconnect();
  });

  it('reads the token from an SSM SecureString parameter through the AWS SDK, once per process, and connects', async () => {
    // Prepare
    const options = resolveOptions({ group: 'g' }, { KAFKA_LANES_REDIS_URL: url(), KAFKA_LANES_REDIS_AUTH_SECRET: `ssm:${PARAMETER}` });
    const readSecret = awsSecretReader({ endpoint, region: REGION, credentials: CREDENTIALS });
    const before = emulator.calls.length;

    // Act
    const first = await createRedis(options.redis, {}, {}, { readSecret });
    const second = await createRedis(options.redis, {}, {}, { readSecret });

    // Assess
    try {
      expect(await first.ping()).toBe('PONG');
      expect(await second.ping()).toBe('PONG');
      expect(emulator.calls.slice(before)).toEqual([{ target: 'AmazonSSM.GetParameter', body: { Name: PARAMETER, WithDecryption: true }, signed: true }]);
      expect(JSON.stringify(options)).not.toContain(TOKEN);
    } finally {
      first.disconnect();
      second.disconnect();
    }
  });

  it('names the secret and the setting when Secrets Manager has no such secret', async () => {
    // Prepare
    const missing = `arn:aws:secretsmanager:${REGION}:123456789012:secret:${uniqueName('missing')}-AbCdEf`;
    const options = resolveOptions({ group: 'g', redis: { url: url(), passwordSecret: missing } }, {});

    // Act
    const connecting = createRedis(options.redis, {}, {}, { readSecret: awsSecretReader({ endpoint, region: REGION, credentials: CREDENTIALS }) });

    // Assess
    await expect(connecting).rejects.toThrow(
      `Cannot read the secret \`${missing}\` of \`redis.passwordSecret\` (KAFKA_LANES_REDIS_AUTH_SECRET): ResourceNotFoundException: Secrets Manager can't find the specified secret.`,
    );
  });

  it('runs a lanes() handler whose Redis AUTH token is read from Secrets Manager at its first invocation, never put in process.env', async () => {
    // Prepare: the deployment's environment as the plugin sets it (a reference only), the SDK pointed at the emulator.
    const group = uniqueName('grp');
    const topic = uniqueName('src');
    await createTopic(topic, 1);
    Object.assign(process.env, {
      KAFKA_LANES_GROUP: group,
      KAFKA_LANES_REDIS_URL: url(),
      KAFKA_LANES_REDIS_AUTH_SECRET: SECRET_ARN,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    });
    const seen: unknown[] = [];
    const handler = lanes({}, async (record) => {
      seen.push(record.value);
    });
    await produce(topic, [1, 2, 3].map((i) => ({ key: `k${i}`, value: JSON.stringify({ i }) })));
    const records = await fetchRecords(topic, 3);
    const before = emulator.calls.length;
    const check = new Redis({ port: redis.port, password: TOKEN });

    try {
      // Act
      const first = await handler(eventOf(records.slice(0, 2)), contextWithin(30_000) as unknown as Context);
      const second = await handler(eventOf(records.slice(2)), contextWithin(30_000) as unknown as Context);

      // Assess
      expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
      expect(seen).toEqual(expect.arrayContaining([{ i: 1 }, { i: 2 }, { i: 3 }]));
      // The done bits are in the server that requires the token.
      expect((await check.keys(`*${group}*`)).length).toBeGreaterThan(0);
      expect(emulator.calls.slice(before)).toEqual([{ target: 'secretsmanager.GetSecretValue', body: { SecretId: SECRET_ARN }, signed: true }]);
      expect(Object.values(process.env).filter((value) => value?.includes(TOKEN))).toEqual([]);
      expect(JSON.stringify(handler.options)).not.toContain(TOKEN);
    } finally {
      check.disconnect();
      await handler.close();
    }
  });

  it("runs the scheduled committer with the handler's environment: the same secret read once for its runs", async () => {
    // Prepare: the environment the plugin gives the handler and its committer alike.
    const group = uniqueName('grp');
    const env = { KAFKA_LANES_GROUP: group, KAFKA_LANES_BROKERS: KAFKA_BROKERS.join(','), KAFKA_LANES_REDIS_URL: url(), KAFKA_LANES_REDIS_AUTH_SECRET: SECRET_ARN };
    const run = committerHandler(env, { readSecret: awsSecretReader({ endpoint, region: REGION, credentials: CREDENTIALS }) });
    const before = emulator.calls.length;

    // Act
    const [first, second] = await (async () => {
      try {
        return [await run(), await run()];
      } finally {
        await run.close();
      }
    })();

    // Assess
    expect([first.groupId, second.groupId]).toEqual([`${group}.lanes`, `${group}.lanes`]);
    expect(emulator.calls.slice(before)).toEqual([{ target: 'secretsmanager.GetSecretValue', body: { SecretId: SECRET_ARN }, signed: true }]);
  });
});
