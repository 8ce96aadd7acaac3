import type { EventRecordFormat, KeyOf, Ordering, StepSerializer } from './lanes-options';
import type { RegistryDeserializer } from '../registry/types';
import type { RecordPartInput } from './standard-schema';

/**
 * The backoff between attempts as a user writes it. Left out (or `{ type: 'tiers' }`), the n-th retry waits the
 * n-th tier's delay. An object without `type` is exponential, so `{ maxDelayMs: 60_000 }` keeps the other
 * exponential defaults.
 */
export type BackoffInput =
  | {
      /** The n-th retry waits the n-th tier's delay (`retry.tiers`), the last tier repeating. The default. */
      readonly type: 'tiers';
    }
  | {
      readonly type: 'fixed';
      /** Delay before every next attempt, in ms. Default `5_000`. */
      readonly delayMs?: number;
    }
  | {
      readonly type?: 'exponential';
      /** Delay after the first failed attempt, in ms. Default `1_000`. */
      readonly initialDelayMs?: number;
      /** Growth per failed attempt, at least 1. Default `2`. */
      readonly multiplier?: number;
      /** Cap of the delay before jitter, in ms. Default `600_000` (10 minutes). */
      readonly maxDelayMs?: number;
      /**
       * `'full'`: uniform in [0, delay]; `'equal'`: delay/2 + uniform in [0, delay/2]; `'none'`. Default `'full'`
       * (spreads the retries of records that failed together, e.g. during an outage of a downstream service).
       */
      readonly jitter?: 'full' | 'equal' | 'none';
    };

/** The retry options as a user writes them; each field left out keeps its default. */
export interface RetryOptionsInput {
  /** Attempts per record, the first run included: 1 = no retry, at most 1,000. Default `5`. */
  readonly maxAttempts?: number;
  /**
   * Default `{ type: 'tiers' }`: the n-th retry waits the n-th tier's delay and comes from that tier's topic, the
   * last tier repeating until `maxAttempts` (`['5s', '1m', '10m']`: 5 s, 1 minute, 10 minutes, 10 minutes, ...).
   * A `fixed` or `exponential` backoff computes each delay instead and picks the longest tier not above it.
   */
  readonly backoff?: BackoffInput;
  /**
   * Retry topic tiers: durations `<integer>ms|s|m|h`, strictly ascending, at least one. Each is a topic
   * `<group>.retry.<tier>`. Default `['5s', '1m', '10m']`.
   */
  readonly tiers?: readonly string[];
}

/**
 * Redis connection: one server (`url`) or a cluster (`clusterNodes`). When the options give neither, one comes
 * from the environment: `KAFKA_LANES_REDIS_URL` or `KAFKA_LANES_REDIS_CLUSTER_NODES` (setting both is an error).
 */
export interface RedisOptionsInput {
  /** `redis://` or `rediss://` URL of one server; ignored when `clusterNodes` is not empty. Default `redis://127.0.0.1:6379`. */
  readonly url?: string;
  /** `host:port` seeds of a Redis Cluster. Default none (a single server at `url`). */
  readonly clusterNodes?: readonly string[];
  /**
   * TLS to Redis (ElastiCache in-transit encryption). Default: `KAFKA_LANES_REDIS_TLS` (`true` / `false`), else
   * `true` for a `rediss://` URL and `false` otherwise.
   */
  readonly tls?: boolean;
  /** ACL user (ElastiCache RBAC). Default: `KAFKA_LANES_REDIS_USERNAME`, else the URL's, else none. */
  readonly username?: string;
  /** AUTH token or password. Default: `KAFKA_LANES_REDIS_AUTH_TOKEN`, else the URL's, else none. */
  readonly password?: string;
  /**
   * Where the AUTH token is kept, instead of `password`: a Secrets Manager secret (ARN or name; its text is the
   * token, or JSON with `token` or `password`, and `username`) or an SSM SecureString parameter (`ssm:/path/name`
   * or its ARN). Read on the first connection, once per cold start; never in an environment variable. Default:
   * `KAFKA_LANES_REDIS_AUTH_SECRET`.
   */
  readonly passwordSecret?: string;
  /**
   * Replicas that must acknowledge each invocation's Redis writes (one `WAIT` per invocation) before it returns;
   * fewer within `waitTimeoutMs` fail the invocation and the event source redelivers the batch. Default none.
   */
  readonly waitForReplicas?: number;
  /** The longest that `WAIT` takes, in ms. Default 1,000. */
  readonly waitTimeoutMs?: number;
}

/**
 * SASL for every Kafka client of the framework: a username and password (`plain`, `scram-sha-256`,
 * `scram-sha-512`), given or kept in a Secrets Manager secret (JSON `{ "username", "password" }`, as MSK SCRAM
 * secrets are; read when the first Kafka client is made, once per cold start), or MSK IAM access control (`aws-iam`: OAUTHBEARER tokens signed with the function's AWS
 * credentials, for the region given, else the MSK cluster ARN's, else `AWS_REGION`).
 */
export type SaslInput =
  | {
      readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
      readonly username: string;
      readonly password: string;
    }
  | { readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; readonly secret: string }
  | { readonly mechanism: 'aws-iam'; readonly region?: string };

/** The Kafka clients of the framework (retry and dead-letter producer, committer, CLI). */
export interface KafkaOptionsInput {
  /**
   * `host:port` brokers. Default: `KAFKA_LANES_BROKERS` (comma separated), else none, which means the event's
   * `bootstrapServers`.
   */
  readonly brokers?: readonly string[];
  /** Default `'kafka-lanes'`. */
  readonly clientId?: string;
  /**
   * TLS to the brokers. Default: `KAFKA_LANES_KAFKA_SSL` (`true` / `false`), else `true` with `aws-iam` SASL or an
   * MSK cluster ARN (MSK encrypts client traffic by default), else `false`.
   */
  readonly ssl?: boolean;
  /**
   * An MSK cluster ARN whose bootstrap brokers (for the SASL / TLS in use) are read through `GetBootstrapBrokers`
   * once per cold start. Default: `KAFKA_LANES_MSK_CLUSTER_ARN`. Exclusive with `brokers`.
   */
  readonly mskClusterArn?: string;
  /**
   * Default: from `KAFKA_LANES_SASL_MECHANISM`, `KAFKA_LANES_SASL_USERNAME` and `KAFKA_LANES_SASL_PASSWORD`
   * (all three, or the mechanism `aws-iam` alone), or `KAFKA_LANES_SASL_SECRET` (with the mechanism, else
   * `scram-sha-512`), else no SASL.
   */
  readonly sasl?: SaslInput;
}

/**
 * The options of `lanes(options, handler)` as a user writes them. Everything has a default except `group`, which
 * may come from the environment instead; nested objects are partial (`retry: { maxAttempts: 3 }` keeps the
 * other retry defaults). `resolveOptions` validates them and fills in the defaults.
 */
export interface LanesOptionsInput {
  /**
   * The Kafka consumer group id of the event source. Required, here or as `KAFKA_LANES_GROUP`: a Kafka trigger
   * event does not carry it. Retry and dead-letter topics derive from it (`<group>.retry.5s`, `<group>.dlq`), so
   * it may hold only letters, digits, `.`, `_` and `-`.
   */
  readonly group?: string;
  /** `'key'`: per-key order (default); `'partition'`: total order per partition; `'unordered'`. */
  readonly ordering?: Ordering;
  /** Derives the lane key from the record (e.g. a customer id in the value). Default: the Kafka key. */
  readonly keyOf?: KeyOf;
  /** Records whose lane key is null: each its own lane (`'independent'`, default) or one lane (`'shared'`). */
  readonly nullKey?: 'independent' | 'shared';
  /** Handlers in flight at once, all partitions of one invocation together: 1 to 10,000. Default `100`. */
  readonly concurrency?: number;
  /** Per-record time limit in ms; on expiry `ctx.signal` aborts and the attempt fails. Default `60_000`. */
  readonly recordTimeoutMs?: number;
  /** No record starts once less than this many ms are left before the Lambda deadline. Default `5_000`. */
  readonly deadlineMarginMs?: number;
  /** Done bits are flushed to Redis at least this often (ms), and before returning. Default `200`. */
  readonly flushIntervalMs?: number;
  /**
   * Key deserializer: `'json'`, `'string'`, `'raw'` (the Buffer) or a function; or a Standard Schema (zod,
   * valibot, arktype, ...) the key, read as a string, must pass; or `{ deserializer, schema }`. Default `'string'`.
   */
  readonly key?: RecordPartInput;
  /**
   * Value deserializer: `'json'`, `'string'`, `'raw'` (the Buffer) or a function; or a Standard Schema the value,
   * read as JSON, must pass (`record.value` is then typed from it); or `{ deserializer, schema }`. A record that
   * fails its schema goes to the dead-letter topic with the issues, and its lane goes on. Default `'json'`.
   */
  readonly value?: RecordPartInput;
  readonly retry?: RetryOptionsInput;
  /** After a record is dead-lettered in key mode: the lane goes on (`'release'`, default) or stays blocked (`'hold'`). */
  readonly deadLetter?: { readonly policy?: 'release' | 'hold' };
  readonly redis?: RedisOptionsInput;
  readonly kafka?: KafkaOptionsInput;
  /**
   * Back-pressure caps per partition: `maxWindow` offsets between the frontier and the highest delivered offset
   * (default `1_000_000`, i.e. a 125 KB bitmap), `maxParked` parked records (default `100_000`) and
   * `maxParkedBytes` bytes of parked records in Redis (default 64 MiB).
   */
  readonly caps?: { readonly maxWindow?: number; readonly maxParked?: number; readonly maxParkedBytes?: number };
  /**
   * The event source mapping has `ReportBatchItemFailures` on, so records that could not be handed off are
   * returned as a partial batch response. Default `true`; `false` fails the invocation instead.
   */
  readonly partialBatchResponse?: boolean;
  /**
   * How the trigger's own schema registry integration (provisioned mode: the event source mapping validates keys and
   * values through a Glue or Confluent registry) delivers what it validated: `SOURCE`, the payload without its frame
   * (the frame is put back, so the record reads and is copied as the producer wrote it), or `JSON`, the value decoded
   * to JSON text (`avro()`, `protobuf()` and `jsonSchema()` parse it). Unset: the trigger has no such integration.
   * The serverless plugin sets it from `kafkaLanes.schemaRegistry` (docs/schema-registry.md).
   */
  readonly eventRecordFormat?: EventRecordFormat;
  /**
   * The format of an output topic's values, by topic: `avro()`, `protobuf()` or `jsonSchema()` made with `registry`,
   * `subject` and `schema`. A `ctx.send` to that topic gives the value itself; it is encoded in Confluent's wire format
   * (the schema registered under the subject at the first send) before it is produced. A Buffer is sent as it is.
   */
  readonly outputFormats?: Readonly<Record<string, RegistryDeserializer<unknown>>>;
  /**
   * Durable steps (`ctx.step`): `maxBytes`, the largest serialized result (default 256 KiB; a larger result fails
   * its record for good); `replayHorizonMs`, how long results are kept past the longest retry path so that a
   * dead letter replayed within it skips its completed steps (default 7 days); `serializer`, how results become
   * text (default JSON, `undefined` kept).
   */
  readonly steps?: { readonly maxBytes?: number; readonly replayHorizonMs?: number; readonly serializer?: StepSerializer };
  /**
   * Drop repeats of another kafka-lanes stage's outputs (records with a `lanes-output` header, see `ctx.send`):
   * an output already run by this group is skipped, even when the producing stage sent it twice. Default `false`.
   */
  readonly dedupeOutputs?: boolean;
}

/** One retry tier as a topic. */
export interface RetryTopic {
  /** The tier as configured: `'5s'`. */
  readonly tier: string;
  /** `<group>.retry.<tier>`. */
  readonly topic: string;
  readonly delayMs: number;
}
