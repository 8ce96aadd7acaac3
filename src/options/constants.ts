/**
 * Defaults, limits and environment variable names of the `lanes(...)` options, in one place. Each default is
 * documented where users read it: on `LanesOptionsInput` (types.ts).
 */

/** Every default of `LanesOptions`, except `group` (no default: a Kafka trigger event does not carry it). */
export const DEFAULTS = {
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
    backoff: {
      // One topic per delay, read as Spring's `@RetryableTopic` users read a list of delays: the n-th retry waits the n-th tier.
      tiers: { type: 'tiers' },
      exponential: { type: 'exponential', initialDelayMs: 1_000, multiplier: 2, maxDelayMs: 600_000, jitter: 'full' },
      // Spring Kafka's FixedBackOff default; also the first default tier.
      fixed: { type: 'fixed', delayMs: 5_000 },
    },
    tiers: ['5s', '1m', '10m'],
  },
  deadLetter: { policy: 'release' },
  redis: { url: 'redis://127.0.0.1:6379', clusterNodes: [] },
  kafka: { brokers: [], clientId: 'kafka-lanes', ssl: false },
  caps: { maxWindow: 1_000_000, maxParked: 100_000, maxParkedBytes: 64 * 1024 * 1024 },
  partialBatchResponse: true,
  steps: { maxBytes: 256 * 1024, replayHorizonMs: 7 * 24 * 3_600_000 },
  dedupeOutputs: false,
} as const;

/** Upper bounds that are not a matter of taste. */
export const LIMITS = {
  /** Handlers in flight at once: beyond this a single Lambda process is the bottleneck, not the handler's I/O. */
  concurrency: 10_000,
  maxAttempts: 1_000,
  /**
   * Node's timers fire at once for delays above 2^31-1 ms ("When delay is larger than 2147483647 ... the delay
   * will be set to 1", Node.js timers docs), so every option that becomes a timer stays below it.
   */
  timerMs: 2_147_483_647,
  /** Redis bit offsets must be below 2^32 (SETBIT docs): the widest bitmap span a partition can have. */
  // Redis SETBIT stops at bit 2^32 - 1; the window plus what admission trims lazily must stay below it.
  maxWindow: 2 ** 31,
} as const;

/** Kafka topic names: `[a-zA-Z0-9._-]`, at most 249 characters (Kafka's `Topic.validate`). */
export const TOPIC_NAME = { invalidCharacter: /[^a-zA-Z0-9._-]/g, maxLength: 249 } as const;

/** Environment variables read when the matching option is not given (the serverless plugin sets them). */
export const ENV = {
  group: 'KAFKA_LANES_GROUP',
  redisUrl: 'KAFKA_LANES_REDIS_URL',
  redisClusterNodes: 'KAFKA_LANES_REDIS_CLUSTER_NODES',
  brokers: 'KAFKA_LANES_BROKERS',
  ssl: 'KAFKA_LANES_KAFKA_SSL',
  saslMechanism: 'KAFKA_LANES_SASL_MECHANISM',
  saslUsername: 'KAFKA_LANES_SASL_USERNAME',
  saslPassword: 'KAFKA_LANES_SASL_PASSWORD',
  /** A Secrets Manager secret holding `{"username","password"}`: read at cold start instead of the two above. */
  saslSecret: 'KAFKA_LANES_SASL_SECRET',
  /** An MSK cluster ARN: the brokers come from its `GetBootstrapBrokers`, once per cold start. */
  mskClusterArn: 'KAFKA_LANES_MSK_CLUSTER_ARN',
  redisTls: 'KAFKA_LANES_REDIS_TLS',
  redisUsername: 'KAFKA_LANES_REDIS_USERNAME',
  /** The Redis AUTH token (ElastiCache) or password. */
  redisAuthToken: 'KAFKA_LANES_REDIS_AUTH_TOKEN',
  /** Where the Redis AUTH token is kept (Secrets Manager, or SSM as `ssm:/name`): read at cold start. */
  redisAuthSecret: 'KAFKA_LANES_REDIS_AUTH_SECRET',
  /** Lambda's own region variables: the region MSK IAM tokens are signed for, when the options name none. */
  awsRegion: 'AWS_REGION',
  awsDefaultRegion: 'AWS_DEFAULT_REGION',
  retryTiers: 'KAFKA_LANES_RETRY_TIERS',
  deadLetterPolicy: 'KAFKA_LANES_DEAD_LETTER_POLICY',
  partialBatchResponse: 'KAFKA_LANES_PARTIAL_BATCH_RESPONSE',
  /** What the trigger's schema registry integration delivers (`SOURCE` or `JSON`), set by the plugin. */
  eventRecordFormat: 'KAFKA_LANES_EVENT_RECORD_FORMAT',
  /** The handler's ordering, for the committer: a recovery rebuilds lanes as the source path derives them. */
  ordering: 'KAFKA_LANES_ORDERING',
  /** The declared output topics (`kafkaLanes.outputs`), comma-separated: `ctx.send` to any other fails the record. */
  outputs: 'KAFKA_LANES_OUTPUTS',
  /**
   * The retry function's durable execution timeout in seconds (its `DurableConfig.ExecutionTimeout`, set by the
   * plugin): a retry copy due later than the execution can wait goes back to its tier unchanged.
   */
  retryExecutionTimeout: 'KAFKA_LANES_RETRY_EXECUTION_TIMEOUT',
} as const;

/** SASL mechanisms with a username and password. */
export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
/** MSK IAM access control: SASL/OAUTHBEARER with a token signed by the function's AWS credentials. */
export const AWS_IAM_MECHANISM = 'aws-iam';

/** An MSK cluster ARN; its first group is the region that MSK IAM tokens are signed for. */
export const MSK_CLUSTER_ARN = /^arn:aws[a-z-]*:kafka:([a-z]{2}(?:-[a-z]+)+-[0-9]+):[0-9]{12}:cluster\/[^/\s]+\/[^/\s]+$/;
