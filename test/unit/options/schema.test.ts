import { ConfigError } from '../../../src/errors';
import { OptionsError, resolveOptions } from '../../../src/options';
import type { LanesOptionsInput } from '../../../src/options';
import type { LanesOptions } from '../../../src/options';
import { avro } from '../../../src/registry';

type Env = Record<string, string>;

/** Resolves options that may be wrong in any way (as from JavaScript or YAML). */
const resolve = (input: unknown, env: Env = {}): LanesOptions => resolveOptions(input as LanesOptionsInput, env);

/** The problems `resolve` reports, checked to come as one OptionsError (a ConfigError) listing them one per line. */
function problemsOf(input: unknown, env: Env = {}): readonly string[] {
  try {
    resolve(input, env);
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    expect(error).toBeInstanceOf(ConfigError);
    const { problems, message } = error as OptionsError;
    expect(message).toBe(problems.join('\n'));
    return problems;
  }
  throw new Error('expected an OptionsError, the options were accepted');
}

const DEFAULTS: LanesOptions = {
  group: 'orders-svc',
  ordering: 'key',
  nullKey: 'independent',
  concurrency: 100,
  recordTimeoutMs: 60_000,
  deadlineMarginMs: 5_000,
  flushIntervalMs: 200,
  key: 'string',
  value: 'json',
  retry: {
    maxAttempts: 5,
    backoff: { type: 'tiers', delaysMs: [5_000, 60_000, 600_000], maxDelayMs: 600_000 },
    tiers: ['5s', '1m', '10m'],
  },
  deadLetter: { policy: 'release' },
  redis: { url: 'redis://127.0.0.1:6379', clusterNodes: [] },
  kafka: { brokers: [], clientId: 'kafka-lanes', ssl: false },
  caps: { maxWindow: 1_000_000, maxParked: 100_000, maxParkedBytes: 67_108_864 },
  partialBatchResponse: true,
  steps: { maxBytes: 262_144, replayHorizonMs: 604_800_000 },
  dedupeOutputs: false,
};

describe('resolveOptions', () => {
  describe('defaults', () => {
    it('fills in every default around the group', () => {
      // Act
      const options = resolve({ group: 'orders-svc' });

      // Assess
      expect(options).toEqual(DEFAULTS);
      expect(options).not.toHaveProperty('keyOf');
      expect(options.kafka).not.toHaveProperty('sasl');
    });

    it('keeps every option given, functions by reference', () => {
      // Prepare
      const keyOf = (): string => 'lane';
      const value = (bytes: Buffer | null): unknown => bytes?.length;
      const input: LanesOptionsInput = {
        group: 'orders-svc',
        ordering: 'partition',
        keyOf,
        nullKey: 'shared',
        concurrency: 10_000,
        recordTimeoutMs: 2_147_483_647,
        deadlineMarginMs: 1_000,
        flushIntervalMs: 1,
        key: 'raw',
        value,
        retry: { maxAttempts: 1, backoff: { type: 'fixed', delayMs: 0 }, tiers: ['250ms'] },
        deadLetter: { policy: 'hold' },
        redis: { clusterNodes: ['10.0.0.1:7000', '[::1]:7001', 'redis-2.internal:7002'] },
        kafka: {
          brokers: ['b-1.example:9096'],
          clientId: 'orders',
          ssl: true,
          sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
        },
        caps: { maxWindow: 2 ** 31, maxParked: 1, maxParkedBytes: 1 },
        partialBatchResponse: false,
        steps: { maxBytes: 1, replayHorizonMs: 0, serializer: { serialize: String, deserialize: (text) => text } },
        dedupeOutputs: true,
      };

      // Act
      const options = resolve(input);

      // Assess
      expect(options).toEqual({ ...input, redis: { url: 'redis://127.0.0.1:6379', clusterNodes: input.redis?.clusterNodes } });
      expect(options.keyOf).toBe(keyOf);
      expect(options.value).toBe(value);
    });

    it('resolves resolved options to themselves', () => {
      // Prepare
      const resolved = resolve({
        group: 'orders-svc',
        keyOf: () => 'lane',
        redis: { clusterNodes: ['n1:7000'] },
        kafka: { sasl: { mechanism: 'plain', username: 'u', password: 'p' } },
        retry: { backoff: { type: 'fixed' } },
      });

      // Act
      const again = resolve(resolved, { KAFKA_LANES_REDIS_URL: 'redis://env:6379' });

      // Assess
      expect(again).toEqual(resolved);
    });

    it('does not change the options object it is given', () => {
      // Prepare
      const input = { group: 'orders-svc', retry: { maxAttempts: 3 }, kafka: {} };
      const copy = structuredClone(input);

      // Act
      resolve(input, { KAFKA_LANES_BROKERS: 'b:9092', KAFKA_LANES_REDIS_URL: 'redis://r:6379' });

      // Assess
      expect(input).toEqual(copy);
    });
  });

  describe('partial nested options keep the other defaults', () => {
    it.each<[string, LanesOptionsInput, Partial<LanesOptions>]>([
      ['retry.maxAttempts', { retry: { maxAttempts: 3 } }, { retry: { ...DEFAULTS.retry, maxAttempts: 3 } }],
      [
        'retry.tiers (the default backoff waits each tier in turn)',
        { retry: { tiers: ['1s', '1h'] } },
        { retry: { ...DEFAULTS.retry, tiers: ['1s', '1h'], backoff: { type: 'tiers', delaysMs: [1_000, 3_600_000], maxDelayMs: 3_600_000 } } },
      ],
      [
        'retry.backoff tiers, written out',
        { retry: { backoff: { type: 'tiers' }, tiers: ['250ms'] } },
        { retry: { ...DEFAULTS.retry, tiers: ['250ms'], backoff: { type: 'tiers', delaysMs: [250], maxDelayMs: 250 } } },
      ],
      [
        'retry.backoff without type (exponential)',
        { retry: { backoff: { maxDelayMs: 60_000 } } },
        { retry: { ...DEFAULTS.retry, backoff: { ...exponentialDefaults(), maxDelayMs: 60_000 } } },
      ],
      [
        'retry.backoff with type undefined (exponential)',
        { retry: { backoff: { type: undefined, multiplier: 3 } } },
        { retry: { ...DEFAULTS.retry, backoff: { ...exponentialDefaults(), multiplier: 3 } } },
      ],
      [
        'retry.backoff.jitter',
        { retry: { backoff: { type: 'exponential', jitter: 'equal' } } },
        { retry: { ...DEFAULTS.retry, backoff: { ...exponentialDefaults(), jitter: 'equal' } } },
      ],
      ['retry.backoff fixed', { retry: { backoff: { type: 'fixed' } } }, { retry: { ...DEFAULTS.retry, backoff: { type: 'fixed', delayMs: 5_000 } } }],
      ['kafka.clientId', { kafka: { clientId: 'orders' } }, { kafka: { ...DEFAULTS.kafka, clientId: 'orders' } }],
      ['redis.url', { redis: { url: 'rediss://cache.example:6380/2' } }, { redis: { url: 'rediss://cache.example:6380/2', clusterNodes: [] } }],
      ['caps.maxParked', { caps: { maxParked: 10 } }, { caps: { maxWindow: 1_000_000, maxParked: 10, maxParkedBytes: 67_108_864 } }],
      ['an empty deadLetter', { deadLetter: {} }, { deadLetter: { policy: 'release' } }],
      ['undefined values', { concurrency: undefined, retry: undefined }, {}],
    ])('%s', (_name, input, changes) => {
      // Act
      const options = resolve({ group: 'orders-svc', ...input });

      // Assess
      expect(options).toEqual({ ...DEFAULTS, ...changes });
    });
  });

  describe('environment', () => {
    it.each<[string, Env, Partial<LanesOptions>]>([
      ['KAFKA_LANES_REDIS_URL', { KAFKA_LANES_REDIS_URL: 'redis://cache:6379' }, { redis: { url: 'redis://cache:6379', clusterNodes: [] } }],
      [
        'KAFKA_LANES_REDIS_CLUSTER_NODES',
        { KAFKA_LANES_REDIS_CLUSTER_NODES: 'n1:7000, n2:7001,' },
        { redis: { url: 'redis://127.0.0.1:6379', clusterNodes: ['n1:7000', 'n2:7001'] } },
      ],
      ['KAFKA_LANES_BROKERS', { KAFKA_LANES_BROKERS: 'b-1:9092,b-2:9092' }, { kafka: { ...DEFAULTS.kafka, brokers: ['b-1:9092', 'b-2:9092'] } }],
      ['KAFKA_LANES_KAFKA_SSL true', { KAFKA_LANES_KAFKA_SSL: 'true' }, { kafka: { ...DEFAULTS.kafka, ssl: true } }],
      ['KAFKA_LANES_KAFKA_SSL TRUE', { KAFKA_LANES_KAFKA_SSL: 'TRUE' }, { kafka: { ...DEFAULTS.kafka, ssl: true } }],
      ['KAFKA_LANES_KAFKA_SSL false', { KAFKA_LANES_KAFKA_SSL: 'false' }, { kafka: { ...DEFAULTS.kafka, ssl: false } }],
      [
        'KAFKA_LANES_SASL_*',
        { KAFKA_LANES_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_LANES_SASL_USERNAME: 'svc', KAFKA_LANES_SASL_PASSWORD: 's3cret' },
        { kafka: { ...DEFAULTS.kafka, sasl: { mechanism: 'scram-sha-256', username: 'svc', password: 's3cret' } } },
      ],
      ['empty variables, as unset', { KAFKA_LANES_BROKERS: '', KAFKA_LANES_KAFKA_SSL: '', KAFKA_LANES_REDIS_URL: '' }, {}],
    ])('reads %s when the option is not given', (_name, env, changes) => {
      // Act
      const options = resolve({ group: 'orders-svc' }, env);

      // Assess
      expect(options).toEqual({ ...DEFAULTS, ...changes });
    });

    it('reads the group from KAFKA_LANES_GROUP', () => {
      // Act
      const options = resolve({}, { KAFKA_LANES_GROUP: 'orders-svc' });

      // Assess
      expect(options.group).toBe('orders-svc');
    });

    it('reads the retry tiers, dead-letter policy and partialBatchResponse the serverless plugin sets', () => {
      // Act
      const fromEnv = resolve({ group: 'g' }, {
        KAFKA_LANES_RETRY_TIERS: '1s, 5s',
        KAFKA_LANES_DEAD_LETTER_POLICY: 'hold',
        KAFKA_LANES_PARTIAL_BATCH_RESPONSE: 'false',
      });
      const sameInCode = resolve({ group: 'g', retry: { tiers: ['1s', '5s'] }, deadLetter: { policy: 'hold' }, partialBatchResponse: true }, {
        KAFKA_LANES_RETRY_TIERS: '1s,5s',
        KAFKA_LANES_DEAD_LETTER_POLICY: 'hold',
        KAFKA_LANES_PARTIAL_BATCH_RESPONSE: 'false',
      });

      // Assess
      expect([fromEnv.retry.tiers, fromEnv.deadLetter.policy, fromEnv.partialBatchResponse]).toEqual([['1s', '5s'], 'hold', false]);
      expect([sameInCode.retry.tiers, sameInCode.deadLetter.policy, sameInCode.partialBatchResponse]).toEqual([['1s', '5s'], 'hold', true]);
    });

    it.each([
      ['retry.tiers', { retry: { tiers: ['5s', '1m'] } }, { KAFKA_LANES_RETRY_TIERS: '1s,5s,30s' }, /`retry\.tiers`: expected it in serverless\.yml \(`kafkaLanes: \{ retryTiers: \[\.\.\.\] \}`\).*`1s,5s,30s`.*got `5s,1m` in code/],
      ['deadLetter.policy', { deadLetter: { policy: 'hold' } }, { KAFKA_LANES_DEAD_LETTER_POLICY: 'release' }, /`deadLetter\.policy`: expected it in serverless\.yml \(`kafkaLanes: \{ deadLetter: \{ policy \} \}`\).*got `hold` in code/],
    ])('refuses %s set in code to another value than the deployment gives the committer', (_option, input, env, message) => {
      // Act
      const act = (): unknown => resolve({ group: 'g', ...input }, env);

      // Assess
      expect(act).toThrow(message);
    });

    it("reads what the trigger's schema registry integration delivers from KAFKA_LANES_EVENT_RECORD_FORMAT, and refuses another value", () => {
      // Act
      const fromEnv = resolve({ group: 'g' }, { KAFKA_LANES_EVENT_RECORD_FORMAT: 'json' });
      const none = resolve({ group: 'g' }, {});
      const act = (): unknown => resolve({ group: 'g' }, { KAFKA_LANES_EVENT_RECORD_FORMAT: 'AVRO' });

      // Assess
      expect([fromEnv.eventRecordFormat, none.eventRecordFormat]).toEqual(['JSON', undefined]);
      expect(act).toThrow('Invalid kafka-lanes option `eventRecordFormat` (from environment variable `KAFKA_LANES_EVENT_RECORD_FORMAT`): expected `SOURCE` or `JSON`, got `AVRO` (string)');
    });

    it('takes an output format that can encode, and refuses one made without its subject and schema', () => {
      // Prepare
      const writer = avro({ registry: 'http://127.0.0.1:8081', subject: 'out-value', schema: '"string"' });

      // Act
      const options = resolve({ group: 'g', outputFormats: { out: writer } }, {});
      const act = (): unknown => resolve({ group: 'g', outputFormats: { out: avro({ registry: 'http://127.0.0.1:8081' }) } }, {});

      // Assess
      expect(options.outputFormats).toEqual({ out: writer });
      expect(act).toThrow(/`outputFormats`.*avro\(\), protobuf\(\) or jsonSchema\(\) given `registry`, `subject` and `schema`/);
    });

    it('reads the ordering the committer rebuilds lanes by from KAFKA_LANES_ORDERING, and refuses another in code', () => {
      // Act
      const fromEnv = resolve({ group: 'g' }, { KAFKA_LANES_ORDERING: 'partition' });
      const sameInCode = resolve({ group: 'g', ordering: 'partition' }, { KAFKA_LANES_ORDERING: 'partition' });
      const act = (): unknown => resolve({ group: 'g', ordering: 'key' }, { KAFKA_LANES_ORDERING: 'partition' });

      // Assess
      expect([fromEnv.ordering, sameInCode.ordering]).toEqual(['partition', 'partition']);
      expect(act).toThrow(/`ordering`: expected the same value in code and in `KAFKA_LANES_ORDERING`.*got `key` in code and `partition` from the environment/);
    });

    it('reads process.env when no environment is passed', () => {
      // Prepare
      const saved = process.env['KAFKA_LANES_GROUP'];
      process.env['KAFKA_LANES_GROUP'] = 'from-process-env';

      try {
        // Act
        const options = resolveOptions({});

        // Assess
        expect(options.group).toBe('from-process-env');
      } finally {
        if (saved === undefined) delete process.env['KAFKA_LANES_GROUP'];
        else process.env['KAFKA_LANES_GROUP'] = saved;
      }
    });

    it('prefers every option given to its environment variable', () => {
      // Prepare
      const env: Env = {
        KAFKA_LANES_GROUP: 'env-group',
        KAFKA_LANES_REDIS_URL: 'redis://env:6379',
        KAFKA_LANES_BROKERS: 'env:9092',
        KAFKA_LANES_KAFKA_SSL: 'true',
        KAFKA_LANES_SASL_MECHANISM: 'plain',
        KAFKA_LANES_SASL_USERNAME: 'env',
        KAFKA_LANES_SASL_PASSWORD: 'env',
      };
      const sasl = { mechanism: 'plain', username: 'opt', password: 'opt' } as const;

      // Act
      const options = resolve({ group: 'opt-group', redis: { url: 'redis://opt:6379' }, kafka: { brokers: [], ssl: false, sasl } }, env);

      // Assess
      expect(options.group).toBe('opt-group');
      expect(options.redis).toEqual({ url: 'redis://opt:6379', clusterNodes: [] });
      expect(options.kafka).toEqual({ brokers: [], clientId: 'kafka-lanes', ssl: false, sasl });
    });

    it.each([
      ['redis.url', { url: 'redis://opt:6379' }, { url: 'redis://opt:6379', clusterNodes: [] }],
      ['redis.clusterNodes', { clusterNodes: ['opt:7000'] }, { url: 'redis://127.0.0.1:6379', clusterNodes: ['opt:7000'] }],
    ])('reads no Redis variable when %s is given: one connection is one choice', (_name, redis, expected) => {
      // Act
      const options = resolve(
        { group: 'orders-svc', redis },
        { KAFKA_LANES_REDIS_URL: 'redis://env:6379', KAFKA_LANES_REDIS_CLUSTER_NODES: 'env:7000' },
      );

      // Assess
      expect(options.redis).toEqual(expected);
    });

    it.each<[string, Env, string]>([
      [
        'KAFKA_LANES_KAFKA_SSL',
        { KAFKA_LANES_KAFKA_SSL: 'yes' },
        'Invalid kafka-lanes option `kafka.ssl` (from environment variable `KAFKA_LANES_KAFKA_SSL`): expected `true` or `false`, got `yes` (string)',
      ],
      [
        'KAFKA_LANES_BROKERS',
        { KAFKA_LANES_BROKERS: 'b-1:9092,b-2' },
        'Invalid kafka-lanes option `kafka.brokers[1]` (from environment variable `KAFKA_LANES_BROKERS`): expected `host:port` with a port from 1 to 65535, got `b-2` (string)',
      ],
      [
        'KAFKA_LANES_REDIS_CLUSTER_NODES',
        { KAFKA_LANES_REDIS_CLUSTER_NODES: 'n1:70000' },
        'Invalid kafka-lanes option `redis.clusterNodes[0]` (from environment variable `KAFKA_LANES_REDIS_CLUSTER_NODES`): expected `host:port` with a port from 1 to 65535, got `n1:70000` (string)',
      ],
      [
        'KAFKA_LANES_REDIS_URL',
        { KAFKA_LANES_REDIS_URL: 'cache:6379' },
        'Invalid kafka-lanes option `redis.url` (from environment variable `KAFKA_LANES_REDIS_URL`): expected a `redis://` or `rediss://` URL with a host, like `redis://127.0.0.1:6379`, got `cache:6379` (string)',
      ],
      [
        'both Redis variables',
        { KAFKA_LANES_REDIS_URL: 'redis://cache:6379', KAFKA_LANES_REDIS_CLUSTER_NODES: 'n1:7000' },
        'Invalid kafka-lanes option `redis` (from environment variables): expected `KAFKA_LANES_REDIS_URL` (one server) or `KAFKA_LANES_REDIS_CLUSTER_NODES` (a cluster), got both',
      ],
      [
        'KAFKA_LANES_SASL_MECHANISM',
        { KAFKA_LANES_SASL_MECHANISM: 'AWS_MSK_IAM', KAFKA_LANES_SASL_USERNAME: 'u', KAFKA_LANES_SASL_PASSWORD: 'p' },
        'Invalid kafka-lanes option `kafka.sasl.mechanism` (from environment variable `KAFKA_LANES_SASL_MECHANISM`): expected one of `plain`, `scram-sha-256`, `scram-sha-512`, `aws-iam`, got `aws_msk_iam` (string)',
      ],
      [
        'SASL variables in part',
        { KAFKA_LANES_SASL_USERNAME: 'u', KAFKA_LANES_SASL_PASSWORD: 'p' },
        'Invalid kafka-lanes option `kafka.sasl` (from environment variables): expected all three of `KAFKA_LANES_SASL_MECHANISM`, `KAFKA_LANES_SASL_USERNAME`, `KAFKA_LANES_SASL_PASSWORD` or none, got only `KAFKA_LANES_SASL_USERNAME`, `KAFKA_LANES_SASL_PASSWORD`',
      ],
      [
        'KAFKA_LANES_GROUP',
        { KAFKA_LANES_GROUP: 'orders svc' },
        'Invalid kafka-lanes option `group` (from environment variable `KAFKA_LANES_GROUP`): expected only letters, digits, `.`, `_` and `-`, because the retry and dead-letter topics `<group>.retry.<tier>` and `<group>.dlq` derive from it and Kafka topic names allow nothing else, got `orders svc` (string): it contains ` `',
      ],
    ])('validates %s like the option and names the variable', (_name, env, problem) => {
      // Act
      const problems = problemsOf(env['KAFKA_LANES_GROUP'] === undefined ? { group: 'orders-svc' } : {}, env);

      // Assess
      expect(problems).toEqual([problem]);
    });
  });

  describe('group', () => {
    const MISSING =
      'Missing kafka-lanes option `group`: expected the Kafka consumer group id of the event source, in the option `group` ' +
      'or the environment variable `KAFKA_LANES_GROUP`; a Kafka trigger event does not carry it';

    it.each([[{}], [{ group: undefined }], [undefined]])('is required, in the option or the environment: %p', (input) => {
      // Act
      const problems = problemsOf(input);

      // Assess
      expect(problems).toEqual([MISSING]);
    });

    it('says when KAFKA_LANES_GROUP is set but empty', () => {
      // Act
      const problems = problemsOf({}, { KAFKA_LANES_GROUP: '' });

      // Assess
      expect(problems).toEqual([MISSING.replace('`KAFKA_LANES_GROUP`;', '`KAFKA_LANES_GROUP` (`KAFKA_LANES_GROUP` is set but empty);')]);
    });

    it.each([['orders-svc'], ['orders_svc.v2'], ['A-Z.a-z_0-9']])('accepts %p, which yields valid topic names', (group) => {
      // Act
      const options = resolve({ group });

      // Assess
      expect(options.group).toBe(group);
    });

    it.each([
      ['orders svc', 'it contains ` `'],
      ['orders/eu', 'it contains `/`'],
      ['bestellungen-größe', 'it contains `ö`, `ß`'],
      ['a:b{c}', 'it contains `:`, `{`, `}`'],
    ])('rejects %p, which yields invalid topic names: %s', (group, reason) => {
      // Act
      const problems = problemsOf({ group });

      // Assess
      expect(problems).toEqual([
        `Invalid kafka-lanes option \`group\`: expected only letters, digits, \`.\`, \`_\` and \`-\`, because the retry and ` +
          `dead-letter topics \`<group>.retry.<tier>\` and \`<group>.dlq\` derive from it and Kafka topic names allow ` +
          `nothing else, got \`${group}\` (string): ${reason}`,
      ]);
    });

    it.each([
      ['the default tiers', undefined, 239, '<group>.retry.10m'],
      ['a longer tier', ['1s', '100000ms'], 234, '<group>.retry.100000ms'],
    ])('is short enough for 249-character topic names with %s', (_name, tiers, longest, topic) => {
      // Prepare
      const retry = tiers === undefined ? {} : { tiers };

      // Act
      const atLimit = resolve({ group: 'g'.repeat(longest), retry });
      const problems = problemsOf({ group: 'g'.repeat(longest + 1), retry });

      // Assess
      expect(atLimit.group).toHaveLength(longest);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(
        new RegExp(
          `^Invalid kafka-lanes option \`group\`: expected at most ${longest} characters, so that the topic \`${topic}\` ` +
            `derived from it fits Kafka's limit of 249 characters for a topic name, got \`g+\\.\\.\\.\` \\(string\\): ${longest + 1} characters$`,
        ),
      );
    });

    it('is checked against the dead-letter topic when the tiers are invalid', () => {
      // Act
      const problems = problemsOf({ group: 'g'.repeat(246), retry: { tiers: 'soon' } });

      // Assess
      expect(problems).toHaveLength(2);
      expect(problems).toContainEqual(expect.stringContaining('expected at most 245 characters, so that the topic `<group>.dlq`'));
    });

    it('rejects an empty string', () => {
      // Act
      const problems = problemsOf({ group: '' });

      // Assess
      expect(problems).toEqual(['Invalid kafka-lanes option `group`: expected a non-empty string, got `` (string)']);
    });
  });

  describe('a bad option is named, with what was expected and what was given', () => {
    it.each<[string, Record<string, unknown>, string]>([
      ['concurrency', { concurrency: 0 }, 'expected a positive integer, got `0` (number)'],
      ['concurrency', { concurrency: 1.5 }, 'expected a positive integer at most 10,000, got `1.5` (number)'],
      ['concurrency', { concurrency: 10_001 }, 'expected a positive integer at most 10,000, got `10001` (number)'],
      ['concurrency', { concurrency: '100' }, 'expected a positive integer, got `100` (string)'],
      ['concurrency', { concurrency: Number.NaN }, 'expected a positive integer, got `NaN` (number)'],
      ['concurrency', { concurrency: Number.POSITIVE_INFINITY }, 'expected a positive integer, got `Infinity` (number)'],
      ['concurrency', { concurrency: null }, 'expected a positive integer, got `null` (null)'],
      ['ordering', { ordering: 'Key' }, 'expected one of `key`, `partition`, `unordered`, got `Key` (string)'],
      ['nullKey', { nullKey: 'null' }, 'expected `independent` or `shared`, got `null` (string)'],
      ['keyOf', { keyOf: 'value.customerId' }, 'expected a function (record) => lane key, got `value.customerId` (string)'],
      ['recordTimeoutMs', { recordTimeoutMs: 0 }, 'expected a positive integer, got `0` (number)'],
      ['recordTimeoutMs', { recordTimeoutMs: 2 ** 31 }, 'expected a positive integer at most 2,147,483,647, got `2147483648` (number)'],
      ['deadlineMarginMs', { deadlineMarginMs: 999 }, 'expected an integer of at least 1000, got `999` (number)'],
      ['flushIntervalMs', { flushIntervalMs: 0 }, 'expected a positive integer, got `0` (number)'],
      ['key', { key: 'avro' }, 'expected `json`, `string`, `raw`, a function (bytes, record) => value, a Standard Schema (zod, valibot, arktype, ...) or `{ deserializer, schema }`, got `avro` (string)'],
      ['value', { value: null }, 'expected `json`, `string`, `raw`, a function (bytes, record) => value, a Standard Schema (zod, valibot, arktype, ...) or `{ deserializer, schema }`, got `null` (null)'],
      ['retry', { retry: 5 }, 'expected an object like `{ maxAttempts: 5 }`, got `5` (number)'],
      ['retry.maxAttempts', { retry: { maxAttempts: 0 } }, 'expected a positive integer, got `0` (number)'],
      ['retry.maxAttempts', { retry: { maxAttempts: 1_001 } }, 'expected a positive integer at most 1,000, got `1001` (number)'],
      ['retry.backoff', { retry: { backoff: 'exponential' } }, "expected an object like `{ type: 'exponential', maxDelayMs: 60000 }`, got `exponential` (string)"],
      ['retry.backoff.type', { retry: { backoff: { type: 'linear' } } }, 'expected `tiers`, `fixed` or `exponential`, got `linear` (string)'],
      ['retry.backoff.delayMs', { retry: { backoff: { type: 'fixed', delayMs: -1 } } }, 'expected a non-negative integer, got `-1` (number)'],
      ['retry.backoff.initialDelayMs', { retry: { backoff: { initialDelayMs: 0.5 } } }, 'expected a non-negative integer, got `0.5` (number)'],
      ['retry.backoff.multiplier', { retry: { backoff: { multiplier: 0.5 } } }, 'expected a number of at least 1, got `0.5` (number)'],
      ['retry.backoff.maxDelayMs', { retry: { backoff: { initialDelayMs: 2_000, maxDelayMs: 1_000 } } }, 'expected at least `initialDelayMs` (2000), got `1000` (number)'],
      ['retry.backoff.jitter', { retry: { backoff: { jitter: true } } }, 'expected one of `full`, `equal`, `none`, got `true` (boolean)'],
      ['retry.tiers', { retry: { tiers: '5s' } }, 'expected a list of durations, like `5s`, `1m`, `10m`, got `5s` (string)'],
      ['retry.tiers', { retry: { tiers: [] } }, 'expected at least one retry tier, got `[]` (array)'],
      [
        'retry.tiers[1]',
        { retry: { tiers: ['5s', '1.5m'] } },
        'expected a duration `<integer><unit>` with a positive integer and unit `ms`, `s`, `m` or `h`, like `5s`, got `1.5m` (string)',
      ],
      ['retry.tiers[1]', { retry: { tiers: ['60s', '1m'] } }, 'expected a longer delay than the tier before it, `60s` (tiers ascend strictly), got `1m` (string)'],
      ['retry.tiers[1]', { retry: { tiers: ['5s', '5s'] } }, 'expected a longer delay than the tier before it, `5s` (tiers ascend strictly), got `5s` (string)'],
      ['deadLetter.policy', { deadLetter: { policy: 'drop' } }, 'expected `release` or `hold`, got `drop` (string)'],
      ['redis.url', { redis: { url: 'http://cache:6379' } }, 'expected a `redis://` or `rediss://` URL with a host, like `redis://127.0.0.1:6379`, got `http://cache:6379` (string)'],
      ['redis.clusterNodes', { redis: { clusterNodes: 'n1:7000' } }, 'expected a list of `host:port`, got `n1:7000` (string)'],
      ['redis.clusterNodes[0]', { redis: { clusterNodes: ['n1'] } }, 'expected `host:port` with a port from 1 to 65535, got `n1` (string)'],
      ['kafka.brokers[0]', { kafka: { brokers: ['b-1:0'] } }, 'expected `host:port` with a port from 1 to 65535, got `b-1:0` (string)'],
      ['kafka.brokers[0]', { kafka: { brokers: [9092] } }, 'expected `host:port`, got `9092` (number)'],
      ['kafka.clientId', { kafka: { clientId: '' } }, 'expected a non-empty string, got `` (string)'],
      ['kafka.ssl', { kafka: { ssl: 'true' } }, 'expected `true` or `false`, got `true` (string)'],
      ['kafka.sasl', { kafka: { sasl: 'plain' } }, "expected an object `{ mechanism, username, password }`, `{ mechanism, secret }` or `{ mechanism: 'aws-iam' }`, got `plain` (string)"],
      ['kafka.sasl.username', { kafka: { sasl: { mechanism: 'plain', password: 'p' } } }, 'expected a non-empty string (or `secret` instead of both), got `undefined` (undefined)'],
      ['kafka.sasl.password', { kafka: { sasl: { mechanism: 'plain', username: 'u', password: 42 } } }, 'expected a non-empty string, got `***` (number)'],
      ['caps.maxWindow', { caps: { maxWindow: 2 ** 31 + 1 } }, 'expected a positive integer at most 2,147,483,648, got `2147483649` (number)'],
      ['caps.maxParked', { caps: { maxParked: 0 } }, 'expected a positive integer, got `0` (number)'],
      ['partialBatchResponse', { partialBatchResponse: 'yes' }, 'expected `true` or `false`, got `yes` (string)'],
    ])('%s: %p', (name, input, expected) => {
      // Act
      const problems = problemsOf({ group: 'orders-svc', ...input });

      // Assess
      expect(problems).toEqual([`Invalid kafka-lanes option \`${name}\`: ${expected}`]);
    });

    it.each([[null], ['orders-svc'], [[]], [42]])('rejects options that are not an object: %p', (input) => {
      // Act
      const problems = problemsOf(input);

      // Assess
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^Invalid kafka-lanes options: expected an object, got `.*` \((null|string|array|number)\)$/);
    });

    it('never shows a SASL password', () => {
      // Act
      const problems = problemsOf(
        { group: 'orders-svc', kafka: { sasl: { mechanism: 'oauth', username: 'u', password: 'hunter2' } } },
        {},
      );

      // Assess
      expect(problems).toEqual([
        'Invalid kafka-lanes option `kafka.sasl.mechanism`: expected one of `plain`, `scram-sha-256`, `scram-sha-512`, `aws-iam`, got `oauth` (string)',
      ]);
      expect(problems.join()).not.toContain('hunter2');
    });

    it.each([
      ['redis://:hunter2@cache:99999', 'redis://***@cache:99999'],
      ['http://app:hunter2@cache:6380/1', 'http://***@cache:6380/1'],
      ['app:hunter2@cache:6379', '***@cache:6379'],
    ])('hides the password in Redis URL %p', (url, shown) => {
      // Act
      const problems = problemsOf({ group: 'orders-svc', redis: { url } });

      // Assess
      expect(problems).toEqual([expect.stringContaining(`got \`${shown}\` (string)`)]);
      expect(problems.join()).not.toContain('hunter2');
    });
  });

  describe('unknown options', () => {
    it.each([
      [{ concurency: 10 }, 'Unknown kafka-lanes option `concurency`: did you mean `concurrency`?'],
      [{ Ordering: 'key' }, 'Unknown kafka-lanes option `Ordering`: did you mean `ordering`?'],
      [{ keyof: () => 'k' }, 'Unknown kafka-lanes option `keyof`: did you mean `keyOf`?'],
      [{ retry: { maxAttempt: 3 } }, 'Unknown kafka-lanes option `retry.maxAttempt`: did you mean `retry.maxAttempts`?'],
      [{ retry: { backoff: { maxDelay: 3 } } }, 'Unknown kafka-lanes option `retry.backoff.maxDelay`: did you mean `retry.backoff.maxDelayMs`?'],
      [{ retry: { backoff: { type: 'fixed', delay: 3 } } }, 'Unknown kafka-lanes option `retry.backoff.delay`: did you mean `retry.backoff.delayMs`?'],
      [
        { retry: { backoff: { type: 'fixed', initialDelayMs: 3 } } },
        "Unknown kafka-lanes option `retry.backoff.initialDelayMs`: it applies to `type: 'exponential'` only, this backoff is `fixed`",
      ],
      [
        { retry: { backoff: { type: 'tiers', delayMs: 3 } } },
        "Unknown kafka-lanes option `retry.backoff.delayMs`: it applies to `type: 'fixed'` only, this backoff is `tiers`",
      ],
      [{ retry: { backoff: { delayMs: 3 } } }, "Unknown kafka-lanes option `retry.backoff.delayMs`: it applies to `type: 'fixed'` only, this backoff is `exponential`"],
      [{ maxAttempts: 3 }, 'Unknown kafka-lanes option `maxAttempts`: did you mean `retry.maxAttempts`?'],
      [{ brokers: [] }, 'Unknown kafka-lanes option `brokers`: did you mean `kafka.brokers`?'],
      [{ kafka: { tls: true } }, 'Unknown kafka-lanes option `kafka.tls`: did you mean `kafka.ssl`?'],
      [{ kafka: { sasl: { mechanism: 'plain', username: 'u', password: 'p', usernmae: 'u' } } }, 'Unknown kafka-lanes option `kafka.sasl.usernmae`: did you mean `kafka.sasl.username`?'],
      [{ redis: { host: 'cache' } }, 'Unknown kafka-lanes option `redis.host`: expected one of `url`, `clusterNodes`, `tls`, `username`, `password`, `passwordSecret`, `waitForReplicas`, `waitTimeoutMs`'],
      [{ caps: { maxWindw: 1 } }, 'Unknown kafka-lanes option `caps.maxWindw`: did you mean `caps.maxWindow`?'],
      [{ deadLetter: { polcy: 'hold' } }, 'Unknown kafka-lanes option `deadLetter.polcy`: did you mean `deadLetter.policy`?'],
      [
        { parallelism: 10 },
        'Unknown kafka-lanes option `parallelism`: expected one of `group`, `ordering`, `keyOf`, `nullKey`, `concurrency`, ' +
          '`recordTimeoutMs`, `deadlineMarginMs`, `flushIntervalMs`, `key`, `value`, `retry`, `deadLetter`, `redis`, `kafka`, ' +
          '`caps`, `partialBatchResponse`, `eventRecordFormat`, `outputFormats`, `steps`, `dedupeOutputs`',
      ],
    ])('%p: %s', (input, problem) => {
      // Act
      const problems = problemsOf({ group: 'orders-svc', ...input });

      // Assess
      expect(problems).toEqual([problem]);
    });
  });

  it('reports every problem at once, one per line', () => {
    // Act
    const problems = problemsOf(
      {
        concurency: 10,
        ordering: 'random',
        retry: { maxAttempts: 0, tiers: ['1m', '30s'], backoff: { multiplier: 0 } },
        kafka: { brokers: ['nope'] },
      },
      { KAFKA_LANES_KAFKA_SSL: 'maybe' },
    );

    // Assess
    expect(problems).toEqual([
      expect.stringMatching(/^Missing kafka-lanes option `group`/),
      'Invalid kafka-lanes option `ordering`: expected one of `key`, `partition`, `unordered`, got `random` (string)',
      'Invalid kafka-lanes option `retry.maxAttempts`: expected a positive integer, got `0` (number)',
      'Invalid kafka-lanes option `retry.backoff.multiplier`: expected a number of at least 1, got `0` (number)',
      'Invalid kafka-lanes option `retry.tiers[1]`: expected a longer delay than the tier before it, `1m` (tiers ascend strictly), got `30s` (string)',
      'Invalid kafka-lanes option `kafka.brokers[0]`: expected `host:port` with a port from 1 to 65535, got `nope` (string)',
      'Invalid kafka-lanes option `kafka.ssl` (from environment variable `KAFKA_LANES_KAFKA_SSL`): expected `true` or `false`, got `maybe` (string)',
      'Unknown kafka-lanes option `concurency`: did you mean `concurrency`?',
    ]);
  });
});

function exponentialDefaults(): Extract<LanesOptions['retry']['backoff'], { type: 'exponential' }> {
  return { type: 'exponential', initialDelayMs: 1_000, multiplier: 2, maxDelayMs: 600_000, jitter: 'full' };
}

describe('redis.waitForReplicas (docs/durability.md)', () => {
  it('keeps the replicas to wait for and the wait, and leaves both out when not given', () => {
    const options = resolveOptions({ group: 'orders', redis: { waitForReplicas: 1, waitTimeoutMs: 250 } }, {});
    expect(options.redis).toMatchObject({ waitForReplicas: 1, waitTimeoutMs: 250 });
    expect(resolveOptions({ group: 'orders' }, {}).redis).not.toHaveProperty('waitForReplicas');
  });

  it.each([
    [{ waitForReplicas: -1 }, 'redis.waitForReplicas'],
    [{ waitForReplicas: 1.5 }, 'redis.waitForReplicas'],
    [{ waitTimeoutMs: 0 }, 'redis.waitTimeoutMs'],
  ])('refuses %j, naming the option', (redis, name) => {
    expect(() => resolveOptions({ group: 'orders', redis } as LanesOptionsInput, {})).toThrow(name);
  });
});
