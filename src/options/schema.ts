// zod/mini, not classic zod: the same validation core without classic's methods on every schema, which made
// evaluating the schema the largest part of a bundled handler's cold start (see bench:coldstart).
import * as z from 'zod/mini';
import type { KeyOf, LanesOptions, StepSerializer } from './lanes-options';
import { AWS_IAM_MECHANISM, DEFAULTS, LIMITS, MSK_CLUSTER_ARN, SASL_MECHANISMS, TOPIC_NAME } from './constants';
import { DURATION_EXPECTED, durationMs } from './duration';
import { groupThousands } from './messages';
import { deadLetterTopic, retryTopic, topicNameProblem } from './retry-tiers';
import { isRecordPartInput, type RecordPartInput } from './standard-schema';
import { parseSecretRef, secretRefExpected, type SecretStore } from './secret-ref';
import { isObject } from '../describe';
import { isRegistryWriter, type RegistryDeserializer } from '../registry/types';
import { touches, type KnownKeys } from './issues';

// Every message of the schema is the "expected ..." part; `resolveOptions` (resolve-options.ts) adds the option's
// name, where the value came from and what was given. A custom issue may add `params.note`, shown after what was given.

/** An integer in [min, max]: one message for type, fraction and lower bound, one naming the upper bound. */
function integer(min: number, max: number): z.ZodMiniNumber<number> {
  const expected = min === 0 ? 'a non-negative integer' : min === 1 ? 'a positive integer' : `an integer of at least ${min}`;
  const bounded = `${expected} at most ${groupThousands(max)}`;
  return z
    .number({ error: expected })
    .check(z.int({ error: max >= Number.MAX_SAFE_INTEGER ? expected : bounded }), z.minimum(min, { error: expected }), z.maximum(max, { error: bounded }));
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T): z.ZodMiniEnum<{ [K in T[number]]: K }> {
  const listed = values.map((value) => `\`${value}\``);
  const expected = listed.length === 2 ? `${listed[0]} or ${listed[1]}` : `one of ${listed.join(', ')}`;
  return z.enum(values, { error: expected });
}

const nonEmptyString = (expected = 'a non-empty string'): z.ZodMiniString<string> => z.string({ error: expected }).check(z.minLength(1, { error: expected }));

const isFunction = (value: unknown): boolean => typeof value === 'function';

/**
 * A schema made when a value first reaches it. The schema is built at cold start, where `lanes(...)` validates the
 * options, and most options are not given: the schema of an absent option with a default (or an optional one) is
 * never made, and making zod schemas is most of what validating the options costs at load (see bench:coldstart).
 * Its issues are the inner schema's, so every message stays the same.
 */
const later = <T extends z.ZodMiniType>(build: () => T): z.ZodMiniLazy<T> => z.lazy(build);

const recordPart = later(() =>
  z.custom<RecordPartInput>(isRecordPartInput, {
    error: '`json`, `string`, `raw`, a function (bytes, record) => value, a Standard Schema (zod, valibot, arktype, ...) or `{ deserializer, schema }`',
  }),
);

// `host:port`, the host a name, an IPv4 address or a bracketed IPv6 address; port 1-65535.
const HOST_PORT = /^(?:\[[0-9a-fA-F:.]+\]|[^\s:[\]/]+):([0-9]{1,5})$/;
const hostPort = later(() =>
  z.string({ error: '`host:port`' }).check(
    z.refine((text) => {
      const port = Number(HOST_PORT.exec(text)?.[1]);
      return port >= 1 && port <= 65_535;
    }, { error: '`host:port` with a port from 1 to 65535' }),
  ),
);

const redisUrl = later(() =>
  z.string({ error: 'a `redis://` or `rediss://` URL' }).check(
    z.refine((text) => {
      try {
        const url = new URL(text);
        return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, { error: 'a `redis://` or `rediss://` URL with a host, like `redis://127.0.0.1:6379`' }),
  ),
);

const duration = (): z.ZodMiniString<string> =>
  z.string({ error: DURATION_EXPECTED }).check(z.refine((text) => durationMs(text) !== undefined, { error: DURATION_EXPECTED }));

const tiers = later(() => z.array(duration(), { error: `a list of durations, like ${DEFAULTS.retry.tiers.map((tier) => `\`${tier}\``).join(', ')}` }).check(
  z.minLength(1, { error: 'at least one retry tier' }),
  z.superRefine((list: string[], ctx) => {
    // Ascending delays give `tierFor` one answer, and one delay must not have two topics (`60s` and `1m`).
    // Each tier is compared with the last valid one before it; invalid ones have their own message.
    let previous: { tier: string; ms: number } | undefined;
    list.forEach((tier, index) => {
      const ms = durationMs(tier);
      if (ms === undefined) return;
      if (previous !== undefined && ms <= previous.ms) {
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: `a longer delay than the tier before it, \`${previous.tier}\` (tiers ascend strictly)`,
          input: tier,
        });
      }
      if (previous === undefined || ms > previous.ms) previous = { tier, ms };
    });
  }),
));

const tiersShape = { type: z.literal('tiers') };
const fixedShape = {
  type: z.literal('fixed'),
  delayMs: z._default(later(() => integer(0, Number.MAX_SAFE_INTEGER)), DEFAULTS.retry.backoff.fixed.delayMs),
};
const exponentialShape = {
  type: z.literal('exponential'),
  initialDelayMs: z._default(later(() => integer(0, Number.MAX_SAFE_INTEGER)), DEFAULTS.retry.backoff.exponential.initialDelayMs),
  multiplier: z._default(
    later(() => z.number({ error: 'a number of at least 1' }).check(z.minimum(1, { error: 'a number of at least 1' }))),
    DEFAULTS.retry.backoff.exponential.multiplier,
  ),
  maxDelayMs: z._default(later(() => integer(0, Number.MAX_SAFE_INTEGER)), DEFAULTS.retry.backoff.exponential.maxDelayMs),
  jitter: z._default(later(() => oneOf(['full', 'equal', 'none'])), DEFAULTS.retry.backoff.exponential.jitter),
};

// What classic zod's `preprocess` is: a pipe from a transform.
const backoff = z.pipe(
  // Left out, retries follow the tiers; an object without `type` is exponential, so `{ maxDelayMs: 60_000 }` keeps
  // the other exponential defaults.
  z.transform((value: unknown) => {
    if (value === undefined) return { type: 'tiers' };
    return isObject(value) && value['type'] === undefined ? { ...value, type: 'exponential' } : value;
  }),
  z.discriminatedUnion(
    'type',
    [
      z.strictObject(tiersShape),
      z.strictObject(fixedShape),
      z.strictObject(exponentialShape).check(
        z.superRefine(
          (value: z.output<z.ZodMiniObject<typeof exponentialShape>>, ctx) => {
            if (value.maxDelayMs >= value.initialDelayMs) return;
            ctx.addIssue({
              code: 'custom',
              path: ['maxDelayMs'],
              message: `at least \`initialDelayMs\` (${value.initialDelayMs})`,
              input: value.maxDelayMs,
            });
          },
          { when: (payload) => !touches(payload.issues, ['initialDelayMs']) && !touches(payload.issues, ['maxDelayMs']) },
        ),
      ),
    ],
    {
      error: (issue) =>
        issue.code === 'invalid_union' ? '`tiers`, `fixed` or `exponential`' : "an object like `{ type: 'exponential', maxDelayMs: 60000 }`",
    },
  ),
);

const retryShape = {
  maxAttempts: z._default(later(() => integer(1, LIMITS.maxAttempts)), DEFAULTS.retry.maxAttempts),
  backoff,
  tiers: z._default(tiers, [...DEFAULTS.retry.tiers]),
};

/** A `tiers` backoff gets each tier's delay, so `backoffDelay` needs nothing but the backoff. */
function withTierDelays(retry: z.output<z.ZodMiniObject<typeof retryShape>>): LanesOptions['retry'] {
  const { backoff } = retry;
  if (backoff.type !== 'tiers') return { ...retry, backoff };
  const delaysMs = retry.tiers.map((tier) => durationMs(tier) ?? 0);
  return { ...retry, backoff: { type: 'tiers', delaysMs, maxDelayMs: Math.max(...delaysMs) } };
}

/** A reference to a secret in one of `stores` (src/options/secret-ref.ts), never the secret itself. */
const secretRef = (stores: readonly SecretStore[]): z.ZodMiniString<string> =>
  z.string({ error: secretRefExpected(stores) }).check(z.superRefine((text: string, ctx) => {
    const ref = parseSecretRef(text, stores);
    if ('problem' in ref) ctx.addIssue({ code: 'custom', message: secretRefExpected(stores), input: text, params: { note: ref.problem } });
  }));

// One object for every kind of SASL (a union would lose the per-field messages): a username and password, or the
// Secrets Manager secret holding them, for the password mechanisms; an optional region for `aws-iam`; what does
// not belong to the mechanism is refined.
const saslShape = {
  mechanism: later(() => oneOf([...SASL_MECHANISMS, AWS_IAM_MECHANISM])),
  username: z.optional(later(() => nonEmptyString())),
  password: z.optional(later(() => nonEmptyString())),
  secret: z.optional(later(() => secretRef(['secretsmanager']))),
  region: z.optional(
    later(() => z.string({ error: 'an AWS region like `eu-west-1`' }).check(z.regex(/^[a-z]{2}(-[a-z]+)+-[0-9]+$/, { error: 'an AWS region like `eu-west-1`' }))),
  ),
};
const sasl = later(() => z.strictObject(saslShape, { error: "an object `{ mechanism, username, password }`, `{ mechanism, secret }` or `{ mechanism: 'aws-iam' }`" }).check(z.superRefine(
  (value: z.output<z.ZodMiniObject<typeof saslShape>>, ctx) => {
    if (value.mechanism === AWS_IAM_MECHANISM) {
      for (const field of ['username', 'password', 'secret'] as const) {
        if (value[field] === undefined) continue;
        ctx.addIssue({ code: 'custom', path: [field], message: "none with `mechanism: 'aws-iam'` (MSK IAM signs with the function's AWS credentials)", input: value[field] });
      }
      return;
    }
    if (value.secret !== undefined) {
      // Exactly one source of credentials: the secret holds `{ "username", "password" }`, as MSK SCRAM secrets do.
      for (const field of ['username', 'password'] as const) {
        if (value[field] === undefined) continue;
        ctx.addIssue({ code: 'custom', path: [field], message: 'none with `secret` (the secret holds the username and password)', input: value[field] });
      }
    } else {
      for (const field of ['username', 'password'] as const) {
        if (value[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'a non-empty string (or `secret` instead of both)', input: undefined });
      }
    }
    if (value.region !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['region'], message: "none: `region` applies to `mechanism: 'aws-iam'` only", input: value.region });
    }
  },
  { when: (payload) => !touches(payload.issues, ['mechanism']) },
)));

// MSK cluster ARNs: arn:<partition>:kafka:<region>:<account>:cluster/<name>/<uuid>.

export const redisShape = {
  // Ignored when `clusterNodes` is not empty (LanesOptions), so resolved options resolve again to themselves.
  url: z._default(redisUrl, DEFAULTS.redis.url),
  clusterNodes: z._default(later(() => z.array(hostPort, { error: 'a list of `host:port`' })), []),
  tls: z.optional(later(() => z.boolean({ error: '`true` or `false`' }))),
  username: z.optional(later(() => nonEmptyString())),
  password: z.optional(later(() => nonEmptyString())),
  /** Where the password is kept (exclusive with `password`): read at cold start, never in the environment. */
  passwordSecret: z.optional(later(() => secretRef(['secretsmanager', 'ssm']))),
  waitForReplicas: z.optional(later(() => z.int({ error: 'a whole number of replicas' }).check(z.nonnegative({ error: 'a whole number of replicas, 0 or more' })))),
  waitTimeoutMs: z.optional(later(() => z.int({ error: 'a whole number of milliseconds' }).check(z.positive({ error: 'a positive whole number of milliseconds' })))),
};

export const kafkaShape = {
  brokers: z._default(later(() => z.array(hostPort, { error: 'a list of `host:port`' })), []),
  clientId: z._default(later(() => nonEmptyString()), DEFAULTS.kafka.clientId),
  // Optional here: its default depends on `sasl` and `mskClusterArn` (see `resolveConnections`).
  ssl: z.optional(later(() => z.boolean({ error: '`true` or `false`' }))),
  sasl: z.optional(sasl),
  mskClusterArn: z.optional(
    later(() =>
      z
        .string({ error: 'an MSK cluster ARN like `arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abcd-1234`' })
        .check(z.regex(MSK_CLUSTER_ARN, { error: 'an MSK cluster ARN like `arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abcd-1234`' })),
    ),
  ),
};

const deadLetterShape = { policy: z._default(later(() => oneOf(['release', 'hold'])), DEFAULTS.deadLetter.policy) };

const capsShape = {
  maxWindow: z._default(later(() => integer(1, LIMITS.maxWindow)), DEFAULTS.caps.maxWindow),
  maxParked: z._default(later(() => integer(1, Number.MAX_SAFE_INTEGER)), DEFAULTS.caps.maxParked),
  maxParkedBytes: z._default(later(() => integer(1, Number.MAX_SAFE_INTEGER)), DEFAULTS.caps.maxParkedBytes),
};

const isSerializer = (value: unknown): boolean =>
  isObject(value) && typeof value.serialize === 'function' && typeof value.deserialize === 'function';

const stepsShape = {
  maxBytes: z._default(later(() => integer(1, 512 * 1024 * 1024)), DEFAULTS.steps.maxBytes),
  replayHorizonMs: z._default(later(() => integer(0, Number.MAX_SAFE_INTEGER)), DEFAULTS.steps.replayHorizonMs),
  serializer: z.optional(later(() => z.custom<StepSerializer>(isSerializer, { error: 'an object `{ serialize(value) => string, deserialize(text) => value }`' }))),
};

const timerMs = (min: number, fallback: number): z.ZodMiniDefault<z.ZodMiniLazy<z.ZodMiniNumber<number>>> => z._default(later(() => integer(min, LIMITS.timerMs)), fallback);
const anObject = (example: string): { error: string } => ({ error: `an object like \`${example}\`` });

// The group must yield valid topic names whatever the tiers: its characters are checked on their own.
const group = nonEmptyString().check(z.superRefine((group: string, ctx) => {
  const problem = topicNameProblem(deadLetterTopic(group));
  if (problem === undefined || !problem.startsWith('it contains')) return;
  ctx.addIssue({
    code: 'custom',
    message:
      'only letters, digits, `.`, `_` and `-`, because the retry and dead-letter topics `<group>.retry.<tier>` and ' +
      '`<group>.dlq` derive from it and Kafka topic names allow nothing else',
    input: group,
    params: { note: problem.replace(/^it contains ([^;]*);.*$/, 'it contains $1') },
  });
}));

const rootShape = {
  group,
  ordering: z._default(later(() => oneOf(['key', 'partition', 'unordered'])), DEFAULTS.ordering),
  keyOf: z.optional(later(() => z.custom<KeyOf>(isFunction, { error: 'a function (record) => lane key' }))),
  nullKey: z._default(later(() => oneOf(['independent', 'shared'])), DEFAULTS.nullKey),
  concurrency: z._default(later(() => integer(1, LIMITS.concurrency)), DEFAULTS.concurrency),
  recordTimeoutMs: timerMs(1, DEFAULTS.recordTimeoutMs),
  // At least a second: the margin pays for parking, the hand-off writes and the last flush.
  deadlineMarginMs: timerMs(1_000, DEFAULTS.deadlineMarginMs),
  flushIntervalMs: timerMs(1, DEFAULTS.flushIntervalMs),
  key: z._default(recordPart, DEFAULTS.key),
  value: z._default(recordPart, DEFAULTS.value),
  retry: z.prefault(z.pipe(z.strictObject(retryShape, anObject('{ maxAttempts: 5 }')), z.transform(withTierDelays)), { backoff: undefined }),
  deadLetter: z.prefault(z.strictObject(deadLetterShape, anObject("{ policy: 'hold' }")), {}),
  redis: z.prefault(z.strictObject(redisShape, anObject("{ url: 'redis://127.0.0.1:6379' }")), {}),
  kafka: z.prefault(z.strictObject(kafkaShape, anObject("{ brokers: ['b-1.example:9092'] }")), {}),
  caps: z.prefault(z.strictObject(capsShape, anObject('{ maxParked: 10000 }')), {}),
  partialBatchResponse: z._default(later(() => z.boolean({ error: '`true` or `false`' })), DEFAULTS.partialBatchResponse),
  eventRecordFormat: z.optional(later(() => oneOf(['SOURCE', 'JSON']))),
  // A custom check, not z.record: the record schema is more of zod read at every cold start, for an option few give.
  outputFormats: z.optional(later(() => z.custom<Readonly<Record<string, RegistryDeserializer<unknown>>>>(
    (value) => isObject(value) && Object.values(value).every(isRegistryWriter),
    { error: 'an object of topic -> avro(), protobuf() or jsonSchema() given `registry`, `subject` and `schema` (what encode writes with)' },
  ))),
  steps: z.prefault(z.strictObject(stepsShape, anObject('{ maxBytes: 65536 }')), {}),
  dedupeOutputs: z._default(later(() => z.boolean({ error: '`true` or `false`' })), DEFAULTS.dedupeOutputs),
};

/** The options of `lanes(...)`: each message the "expected ..." part (resolve-options.ts adds the rest). */
export const optionsSchema = z.strictObject(rootShape, { error: 'an object' }).check(z.superRefine(
  (value: z.output<z.ZodMiniObject<typeof rootShape>>, ctx) => {
    // Checked once the group is a string of topic characters, against the tiers when they are valid too.
    const topics = [deadLetterTopic(value.group)];
    if (!touches(ctx.issues, ['retry', 'tiers'])) topics.push(...value.retry.tiers.map((tier) => retryTopic(value.group, tier)));
    const longest = topics.reduce((a, b) => (b.length > a.length ? b : a));
    if (longest.length <= TOPIC_NAME.maxLength) return;
    const suffix = longest.slice(value.group.length);
    ctx.addIssue({
      code: 'custom',
      path: ['group'],
      message:
        `at most ${TOPIC_NAME.maxLength - suffix.length} characters, so that the topic \`<group>${suffix}\` derived from it ` +
        `fits Kafka's limit of ${TOPIC_NAME.maxLength} characters for a topic name`,
      input: value.group,
      params: { note: `${value.group.length} characters` },
    });
  },
  { when: (payload) => isObject(payload.value) && !touches(payload.issues, ['group']) },
));

/** Keys of each options object, for unknown keys: the schema's own shapes, so they never drift apart. */
export const KNOWN_KEYS: KnownKeys = {
  aliases: { 'kafka.tls': 'kafka.ssl', 'redis.ssl': 'redis.tls' },
  byObject: {
    '': Object.keys(rootShape),
    retry: Object.keys(retryShape),
    'retry.backoff': [...new Set([...Object.keys(exponentialShape), ...Object.keys(fixedShape)])],
    deadLetter: Object.keys(deadLetterShape),
    redis: Object.keys(redisShape),
    kafka: Object.keys(kafkaShape),
    'kafka.sasl': Object.keys(saslShape),
    caps: Object.keys(capsShape),
    steps: Object.keys(stepsShape),
  },
  backoff: { tiers: Object.keys(tiersShape), fixed: Object.keys(fixedShape), exponential: Object.keys(exponentialShape) },
};
