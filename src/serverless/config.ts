import { z } from 'zod';
import { DEFAULTS } from '../options/constants';
import { DURATION_EXPECTED, durationMs } from '../options/duration';
import { alarmsBlockSchema } from './alarms';

// One definition of the plugin's options: the zod schemas below. The framework is only told that the blocks
// exist (see plugin.ts), so every message about them is the plugin's, naming what was expected.

const TOPIC_CHARACTERS = '^[a-zA-Z0-9._-]+$';
const HOST_PORT = '^(\\[[0-9a-fA-F:.]+\\]|[^\\s:\\[\\]/]+):[0-9]{1,5}$';
const DURATION_PATTERN = '^[1-9][0-9]*(ms|s|m|h)$';
const SCHEDULE_PATTERN = '^(rate|cron)\\(.+\\)$';

const duration = z.string().regex(new RegExp(DURATION_PATTERN), { error: DURATION_EXPECTED });
const hostPort = z.string().regex(new RegExp(HOST_PORT), { error: '`host:port`' });
/**
 * A CloudFormation intrinsic function (`!Ref`, `!GetAtt`, `!Sub`, `!ImportValue`, `!Join`...): a value known only
 * at deploy time, such as the address of the stack's own ElastiCache. The plugin passes it through unread.
 */
const intrinsic = z.record(z.string().regex(/^(Ref|Fn::[A-Za-z]+)$/), z.unknown(), {
  error: 'a CloudFormation function (`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::ImportValue`, ...)',
});
const redisUrl = z.string().regex(/^rediss?:\/\/.+/, { error: 'a `redis://` or `rediss://` URL' });

/** A Glue registry's ARN; any other registry URI given as text is a Confluent-compatible registry's URL. */
export const GLUE_REGISTRY_ARN = /^arn:aws[a-z-]*:glue:[a-z0-9-]+:[0-9]{12}:registry\/([^/\s]+)$/;
const HTTP_URL = /^https?:\/\/[^/\s]+\S*$/;
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:\S+$/;
const URI_EXPECTED = 'a Glue registry ARN (`arn:aws:glue:<region>:<account>:registry/<name>`, or a CloudFormation function giving it) or an http(s) URL';
const SECRET_EXPECTED = 'a Secrets Manager secret ARN (or a CloudFormation function giving it)';
/** A value known at deploy time (`!GetAtt Registry.Arn`, `!Ref`, `!ImportValue`, `!Sub`): a Glue registry's or a secret's ARN. */
const arnAtDeploy = z.record(z.string().regex(/^(Ref|Fn::GetAtt|Fn::ImportValue|Fn::Sub|Fn::Join)$/), z.unknown(), {
  error: 'a CloudFormation function giving an ARN (`Ref`, `Fn::GetAtt`, `Fn::ImportValue`, `Fn::Sub`, `Fn::Join`)',
});

/**
 * `kafkaLanes.schemaRegistry`: CloudFormation's `SchemaRegistryConfig`, in the framework's camelCase (what the plugin
 * makes of it: schema-registry.ts).
 */
export const schemaRegistryBlockSchema = z.strictObject({
  /** A Glue registry's ARN (or a CloudFormation function giving it), or a Confluent-compatible registry's URL. */
  schemaRegistryUri: z.union([z.string().regex(new RegExp(`${GLUE_REGISTRY_ARN.source}|${HTTP_URL.source}`), { error: URI_EXPECTED }), arnAtDeploy], { error: URI_EXPECTED }),
  /** `SOURCE` (default): the payload less its frame, framed again by the handler; `JSON`: the value decoded to JSON. */
  eventRecordFormat: z.enum(['SOURCE', 'JSON']).optional(),
  /** The parts the mapping validates (default the value). */
  schemaValidationConfigs: z.array(z.strictObject({ attribute: z.enum(['KEY', 'VALUE']) })).min(1).max(2).optional(),
  /** A Confluent registry's credentials: Secrets Manager secrets (a Glue registry takes the function's role). */
  accessConfigs: z
    .array(
      z.strictObject({
        type: z.enum(['BASIC_AUTH', 'CLIENT_CERTIFICATE_TLS_AUTH', 'SERVER_ROOT_CA_CERTIFICATE']),
        uri: z.union([z.string().regex(SECRET_ARN, { error: SECRET_EXPECTED }), arnAtDeploy], { error: SECRET_EXPECTED }),
      }),
    )
    .min(1)
    .max(2)
    .optional(),
});
export type SchemaRegistryBlock = z.infer<typeof schemaRegistryBlockSchema>;

/** The per-function `kafkaLanes:` block. */
export const functionBlockSchema = z.strictObject({
  /** The consumer group; every framework name (retry and dead-letter topics, Redis keys) derives from it. */
  group: z.string().min(1).max(200).regex(new RegExp(TOPIC_CHARACTERS), { error: 'only letters, digits, `.`, `_` and `-`' }).optional(),
  /** Retry tiers, ascending: one retry topic `<group>.retry.<tier>` and one trigger on it per tier. */
  retryTiers: z.array(duration).min(1).max(20).optional(),
  /** Where the completion bitmaps live. One of `url` and `clusterNodes`. */
  redis: z
    .strictObject({
      url: z.union([redisUrl, intrinsic]).optional(),
      /** Seeds of a Redis Cluster: `host:port` entries, or one CloudFormation value giving `host:port[,host:port]`. */
      clusterNodes: z.union([z.array(z.union([hostPort, intrinsic])).min(1), intrinsic]).optional(),
      /** TLS in transit (ElastiCache with in-transit encryption); a `rediss://` URL implies it. */
      tls: z.boolean().optional(),
      /**
       * Where the AUTH token is kept: a Secrets Manager secret (ARN, name, or a CloudFormation value giving its
       * ARN) or an SSM SecureString parameter (`ssm:/path/name` or its ARN). The functions get the reference and
       * read the token at cold start; they are granted that secret alone.
       */
      authSecret: z.union([z.string().min(1), intrinsic]).optional(),
    })
    .optional(),
  kafka: z
    .strictObject({
      /** Brokers for the retry and dead-letter producers and the committer (default: the trigger's own). */
      brokers: z.array(hostPort).min(1).optional(),
      /**
       * How the producers and the committer authenticate: `iam` (MSK IAM), `scram`, `tls` (TLS without SASL),
       * `none`. Default: what the trigger uses (`iam` for an `msk` trigger without `saslScram512`).
       */
      auth: z.enum(['iam', 'scram', 'tls', 'none']).optional(),
      /**
       * With `scram`: the Secrets Manager secret (ARN, name or a CloudFormation value giving its ARN) holding the
       * producers' and the committer's `{"username","password"}`. Default: the trigger's own SCRAM secret.
       */
      secret: z.union([z.string().min(1), intrinsic]).optional(),
    })
    .optional(),
  /**
   * The handler's `ordering` (default `key`): the committer rebuilds lanes by it when it recovers a partition after
   * Redis lost its state, so it lives here; a handler whose code says otherwise refuses to start.
   */
  ordering: z.enum(['key', 'partition', 'unordered']).optional(),
  /** What the dead-letter topic does to a lane; the committer's re-drive applies it too, so it lives here, not in code. */
  deadLetter: z.strictObject({ policy: z.enum(['release', 'hold']).optional() }).optional(),
  committer: z
    .strictObject({
      /** Default `rate(1 minute)`: an EventBridge schedule expression. */
      schedule: z.string().regex(new RegExp(SCHEDULE_PATTERN), { error: 'a schedule expression like `rate(1 minute)`' }).optional(),
      enabled: z.boolean().optional(),
      /** Seconds. */
      timeout: z.number().int().min(1).max(900).optional(),
    })
    .optional(),
  /**
   * The topics the handler writes with `ctx.send`: its role may write them (`WriteData`, `DescribeTopic`), the stack's
   * topics resource and `topics ensure` create the missing ones, `doctor` checks them, and a send to any other topic
   * fails the record, naming it.
   */
  outputs: z.array(z.string().min(1).max(249).regex(new RegExp(TOPIC_CHARACTERS), { error: 'topic names of letters, digits, `.`, `_` and `-`' })).max(50).optional(),
  /** The stack's topics resource (`Custom::KafkaLanesTopics`): what it creates besides the retry, dead-letter and output topics. */
  topics: z
    .strictObject({
      /** The source topic's partitions: the resource creates it with that many, or grows it to them (never shrinks). */
      partitions: z.number().int().min(1).max(100_000).optional(),
      /** Partitions of created retry, dead-letter and output topics (default: the source's). */
      retryPartitions: z.number().int().min(1).max(100_000).optional(),
      /** Replication factor of created topics (default: the cluster's `default.replication.factor`). */
      replicationFactor: z.number().int().min(1).max(32_767).optional(),
      /** `true`: when the resource is removed (the stack deleted, or the group renamed), delete the group's retry and dead-letter topics. */
      deleteOnRemove: z.boolean().optional(),
    })
    .optional(),
  /**
   * The retry function `<function>Retry` (a Lambda durable function that consumes the retry tiers, waiting out a copy's
   * delay suspended, billed no compute): its durable execution's limits, compiled into the function's `DurableConfig`.
   */
  retry: z
    .strictObject({
      /**
       * Seconds one durable execution may last, waits included (default 900): an event source mapping invokes a durable
       * function synchronously, so at most 15 minutes; a copy due later goes back to its tier unchanged.
       */
      executionTimeout: z.number().int().min(1).max(900, { error: 'at most 900 seconds (an event source mapping waits for a durable execution 15 minutes at most)' }).optional(),
      /** Days Lambda keeps a closed execution's history (default 7; Lambda takes 1 to 90). */
      retentionPeriodInDays: z.number().int().min(1).max(90).optional(),
    })
    .optional(),
  /** CloudWatch alarms and a dashboard of the group (on unless `false`); see `alarms.ts`. */
  alarms: alarmsBlockSchema.optional(),
  /**
   * `true`: a function `<function>Produce` in the group's VPC that writes records to the source topic and waits until
   * the trigger has committed past them (`serverless invoke --function <function>Produce --data ...`), for a first
   * record into a deployed service whose cluster is private. Its role may write the source topic only.
   */
  produce: z.boolean().optional(),
  /**
   * The source trigger validates through a schema registry (provisioned mode only): its `SchemaRegistryConfig`, the
   * grants it reads with, and what the handler is told it delivers (schema-registry.ts).
   */
  schemaRegistry: schemaRegistryBlockSchema.optional(),
});
export type FunctionBlock = z.infer<typeof functionBlockSchema>;

/** The service-level `custom.kafkaLanes:` block. */
export const customBlockSchema = z.strictObject({
  /** Bundle the handlers with esbuild (default `true`). */
  bundle: z.boolean().optional(),
  offline: z
    .strictObject({
      /**
       * The local broker(s) every `msk` trigger and every `kafka` trigger connect to under `serverless offline`,
       * as `host:port` (one for all), or a map from MSK cluster ARN (or `default`) to `host:port`.
       */
      brokers: z.union([hostPort, z.record(z.string(), hostPort)]).optional(),
      /**
       * The Redis the handlers and committers use under `serverless offline` when a `kafkaLanes.redis` setting is
       * a CloudFormation function (known only once deployed); default `redis://127.0.0.1:6379`.
       */
      redis: redisUrl.optional(),
      /** How often the committer runs locally (default `5s`). */
      committerInterval: duration.optional(),
      /** First delay before a failed batch is sent again (default `1s`), doubled up to `retryMaxDelay`. */
      retryDelay: duration.optional(),
      /** Longest delay between two attempts of a failed batch (default `30s`). */
      retryMaxDelay: duration.optional(),
      /** One event may hold several partitions' records, as AWS's events may (default `true`); `false`: one partition per event. */
      mixPartitions: z.boolean().optional(),
    })
    .optional(),
});
export type CustomBlock = z.infer<typeof customBlockSchema>;

/**
 * Validates a block and turns every problem into one line naming where it is, what was expected and what was given.
 *
 * @example
 * validateBlock(functionBlockSchema, { retryTier: ['5s'] }, 'functions.orders.kafkaLanes');
 * // { problems: ['functions.orders.kafkaLanes: unknown key `retryTier`'] }
 */
export function validateBlock<T>(schema: z.ZodType<T>, value: unknown, where: string): { value?: T; problems: string[] } {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return { value: parsed.data, problems: [] };
  const problems = parsed.error.issues.map((issue) => {
    const path = [where, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') return `${path}: unknown key ${issue.keys.map((key) => `\`${key}\``).join(', ')}`;
    return `${path}: ${issue.message}, got ${JSON.stringify(valueAt(value, issue.path))}`;
  });
  return { problems };
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/** Milliseconds of a duration that the schema has already accepted. */
export function ms(text: string | undefined, fallback: string): number {
  return durationMs(text ?? fallback) ?? 0;
}

/**
 * Where a service's messages send the reader: the docs the package ships, as the path from the service's directory
 * (a bare `docs/deploy.md` would name a file of the user's own project).
 */
export const DOCS = 'node_modules/kafka-lanes/docs';

export const PLUGIN_DEFAULTS = {
  retryTiers: [...DEFAULTS.retry.tiers] as string[],
  committerSchedule: 'rate(1 minute)',
  committerTimeout: 60,
  /** Seconds the topics worker may take (creating topics and waiting until each partition serves); its provider 60 more. */
  topicsTimeout: 300,
  /** Seconds the produce function may take (the write, then the wait for the trigger's commit). */
  produceTimeout: 120,
  /** The retry function's `DurableConfig.ExecutionTimeout`: the most an event source mapping waits for a durable execution. */
  retryExecutionTimeout: 900,
  /** The retry function's `DurableConfig.RetentionPeriodInDays`: a week of closed executions' history to look back on. */
  retryRetentionDays: 7,
  offlineBroker: '127.0.0.1:9092',
  offlineRedis: 'redis://127.0.0.1:6379',
  /** Days the functions' CloudWatch log groups keep their logs, unless `provider.logRetentionInDays` says otherwise. */
  logRetentionInDays: 30,
  committerInterval: '5s',
  retryDelay: '1s',
  retryMaxDelay: '30s',
} as const;

/** AWS limits the plugin enforces (Lambda developer guide, "Using Lambda with Amazon MSK / self-managed Kafka"). */
export const AWS_LIMITS = {
  /** A Kafka trigger's function may run at most 14 minutes. */
  kafkaTimeoutSeconds: 840,
  maxBatchSize: 10_000,
  /** An invocation payload is at most 6 MB. */
  maxPayloadBytes: 6 * 1024 * 1024,
  defaultBatchSize: 100,
  /** Seconds; Kafka triggers default to a 500 ms batching window. */
  defaultBatchingWindowSeconds: 0.5,
  /** Lambda `FunctionName`. */
  functionNameLength: 64,
  /** Lambda `Description`. */
  descriptionLength: 256,
  /** An event source mapping's `ConsumerGroupId`. */
  consumerGroupIdLength: 200,
  /** A CloudFormation logical ID. */
  logicalIdLength: 255,
  /**
   * The Node.js runtimes of Lambda durable functions (Lambda developer guide, "Supported runtimes for durable
   * functions"): the retry function's runtime must be one of them.
   */
  durableRuntimes: ['nodejs22.x', 'nodejs24.x'],
} as const;
