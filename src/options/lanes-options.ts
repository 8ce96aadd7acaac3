import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { KafkaRecord } from '../event';
import type { EventRecordFormat } from '../registry/esm-records';
import type { RegistryDeserializer } from '../registry/types';

/**
 * The options of a `lanes(...)` handler, after validation and defaults (see src/options/ for the schema).
 * Every framework name — Redis keys, retry and dead-letter topics — derives from `group`.
 */
export type { EventRecordFormat };

export type Ordering = 'key' | 'partition' | 'unordered';

/** Turns bytes into the value a handler sees; throwing sends the record to the dead-letter topic. */
export type DeserializerFn<T = unknown> = (bytes: Buffer | null, record: KafkaRecord) => T;
export type Deserializer = 'json' | 'string' | 'raw' | DeserializerFn;

/** Derives a record's lane key; `null` or `undefined`: the record has no key (see `nullKey`). */
export type KeyOf = (record: KafkaRecord) => string | Buffer | null | undefined;

/** Turns a step's result into the text Redis keeps, and back (`ctx.step`). Default: JSON. */
export interface StepSerializer {
  serialize(value: unknown): string;
  deserialize(text: string): unknown;
}

export interface StepsOptions {
  /** Largest serialized step result, in bytes (UTF-8); a larger one fails its record, not retried. */
  readonly maxBytes: number;
  /** How long step results outlive the retry path, for `kafka-lanes dlq replay` (ms). */
  readonly replayHorizonMs: number;
  readonly serializer?: StepSerializer;
}

/**
 * The delay before each retry. `'tiers'` (the default): the n-th retry waits the n-th tier's delay, from that
 * tier's topic, the last tier repeating (`['5s', '1m', '10m']` reads as 5 s, then 1 minute, then 10 minutes).
 * `'fixed'` and `'exponential'` compute a delay; the copy goes to the longest tier not above it.
 */
export type Backoff =
  | {
      readonly type: 'tiers';
      /** Each tier's delay in ms, in the order of `retry.tiers`. */
      readonly delaysMs: readonly number[];
      /** The last tier's delay: the longest any retry waits. */
      readonly maxDelayMs: number;
    }
  | { readonly type: 'fixed'; readonly delayMs: number }
  | {
      readonly type: 'exponential';
      readonly initialDelayMs: number;
      readonly multiplier: number;
      readonly maxDelayMs: number;
      /** 'full': uniform in [0, delay]; 'equal': delay/2 + uniform in [0, delay/2]; 'none'. */
      readonly jitter: 'full' | 'equal' | 'none';
    };

export interface RetryOptions {
  /** Attempts per record, the first run included (G4). 1 = no retry. */
  readonly maxAttempts: number;
  readonly backoff: Backoff;
  /** Retry topic tiers, ascending delays, as durations: `['5s', '1m', '10m']` -> `<group>.retry.5s` ... */
  readonly tiers: readonly string[];
}

export interface RedisOptions {
  /** `redis://host:port` of one server; ignored when `clusterNodes` is set. */
  readonly url: string;
  /** `host:port` seeds of a Redis Cluster. */
  readonly clusterNodes: readonly string[];
  /** TLS when given; otherwise TLS for a `rediss://` URL only (see src/connections). */
  readonly tls?: boolean;
  readonly username?: string;
  /** AUTH token or password; overrides the URL's. */
  readonly password?: string;
  /** Where the AUTH token is kept (exclusive with `password`), read on the first connection (src/connections/secrets.ts). */
  readonly passwordSecret?: string;
  /**
   * Replicas that must acknowledge an invocation's Redis writes (one `WAIT` per invocation, after its last write)
   * before it returns; fewer in time fail the invocation, so the event source redelivers its batch. Absent or 0:
   * no wait (docs/durability.md).
   */
  readonly waitForReplicas?: number;
  /** How long that `WAIT` may take, in ms (default 1,000). */
  readonly waitTimeoutMs?: number;
}

/** SASL with a username and password, or the Secrets Manager secret holding them, or MSK IAM (OAUTHBEARER) for a resolved region. */
export type SaslOptions =
  | { readonly mechanism: PasswordMechanism; readonly username: string; readonly password: string }
  | { readonly mechanism: PasswordMechanism; readonly secret: string }
  | { readonly mechanism: 'aws-iam'; readonly region: string };

export type PasswordMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface KafkaOptions {
  /** Brokers for the retry and dead-letter producer; empty: the event's `bootstrapServers`. */
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly ssl: boolean;
  readonly sasl?: SaslOptions;
  /** Brokers from this MSK cluster's `GetBootstrapBrokers` (exclusive with `brokers`). */
  readonly mskClusterArn?: string;
}

export interface LanesOptions {
  readonly group: string;
  readonly ordering: Ordering;
  /** Derives the lane key from the record (e.g. a customer id in the value); default: the Kafka key. */
  readonly keyOf?: KeyOf;
  /** Records whose lane key is null: each its own lane ('independent') or one shared lane ('shared'). */
  readonly nullKey: 'independent' | 'shared';
  /** Handlers in flight at once, all partitions of one invocation together (a record waiting only for its outputs' acknowledgement takes none). */
  readonly concurrency: number;
  /** Per-record time limit: `ctx.signal` aborts and the record counts as failed (retriable). */
  readonly recordTimeoutMs: number;
  /** No record starts once less than this is left before the Lambda deadline. */
  readonly deadlineMarginMs: number;
  /** Done bits are flushed to Redis at least this often, and before returning. */
  readonly flushIntervalMs: number;
  readonly key: Deserializer;
  readonly value: Deserializer;
  /** The Standard Schema the deserialized key must pass, if any; a record that fails it is dead-lettered. */
  readonly keySchema?: StandardSchemaV1;
  /** The Standard Schema the deserialized value must pass, if any. */
  readonly valueSchema?: StandardSchemaV1;
  readonly retry: RetryOptions;
  /** After a record is dead-lettered in key mode: the lane goes on ('release') or stays blocked ('hold'). */
  readonly deadLetter: { readonly policy: 'release' | 'hold' };
  readonly redis: RedisOptions;
  readonly kafka: KafkaOptions;
  readonly caps: { readonly maxWindow: number; readonly maxParked: number; readonly maxParkedBytes: number };
  /**
   * The event source mapping has `ReportBatchItemFailures` on: records that could not be handed off are
   * returned as a Kafka partial batch response. Off: the invocation fails and the whole batch is redelivered.
   */
  readonly partialBatchResponse: boolean;
  /** The trigger's schema registry integration delivers `SOURCE` payloads or `JSON` text; unset: no integration. */
  readonly eventRecordFormat?: EventRecordFormat;
  /** Output topic -> the registry format its `ctx.send` values are encoded with. */
  readonly outputFormats?: Readonly<Record<string, RegistryDeserializer<unknown>>>;
  /** `ctx.step` results: size limit, how long they are kept past the retry path, serializer. */
  readonly steps: StepsOptions;
  /** Records carrying a `lanes-output` header (a kafka-lanes stage's `ctx.send`) run once per output. */
  readonly dedupeOutputs: boolean;
}
