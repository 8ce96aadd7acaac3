import { z } from 'zod';
import { DEFAULTS } from '../options/constants';
import { DURATION_EXPECTED, durationMs } from '../options/duration';
import { alarmsBlockSchema } from './alarms';

// One definition of the plugin's options: the zod schemas below. The framework's JSON schema
// (`configSchemaHandler`) is generated from them, so what the framework checks and what the plugin reads
// cannot drift apart.

const TOPIC_CHARACTERS = '^[a-zA-Z0-9._-]+$';
const HOST_PORT = '^(\\[[0-9a-fA-F:.]+\\]|[^\\s:\\[\\]/]+):[0-9]{1,5}$';
const DURATION_PATTERN = '^[1-9][0-9]*(ms|s|m|h)$';
const SCHEDULE_PATTERN = '^(rate|cron)\\(.+\\)$';

const duration = z.string().regex(new RegExp(DURATION_PATTERN), { error: DURATION_EXPECTED });
const hostPort = z.string().regex(new RegExp(HOST_PORT), { error: '`host:port`' });

/** The per-function `kafkaLanes:` block. */
export const functionBlockSchema = z.strictObject({
  /** The consumer group; every framework name (retry and dead-letter topics, Redis keys) derives from it. */
  group: z.string().min(1).max(200).regex(new RegExp(TOPIC_CHARACTERS), { error: 'only letters, digits, `.`, `_` and `-`' }).optional(),
  /** Retry tiers, ascending: one retry topic `<group>.retry.<tier>` and one trigger on it per tier. */
  retryTiers: z.array(duration).min(1).max(20).optional(),
  /** Where the completion bitmaps live. One of the two. */
  redis: z
    .strictObject({
      url: z.string().regex(/^rediss?:\/\/.+/, { error: 'a `redis://` or `rediss://` URL' }).optional(),
      clusterNodes: z.array(hostPort).min(1).optional(),
    })
    .optional(),
  /** Brokers for the retry and dead-letter producers and the committer (default: the trigger's own). */
  kafka: z.strictObject({ brokers: z.array(hostPort).min(1).optional() }).optional(),
  committer: z
    .strictObject({
      /** Default `rate(1 minute)`: an EventBridge schedule expression. */
      schedule: z.string().regex(new RegExp(SCHEDULE_PATTERN), { error: 'a schedule expression like `rate(1 minute)`' }).optional(),
      enabled: z.boolean().optional(),
      /** Seconds. */
      timeout: z.number().int().min(1).max(900).optional(),
    })
    .optional(),
  /** CloudWatch alarms and a dashboard of the group (on unless `false`); see `alarms.ts`. */
  alarms: alarmsBlockSchema.optional(),
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
      /** How often the committer runs locally (default `5s`). */
      committerInterval: duration.optional(),
      /** First delay before a failed batch is sent again (default `1s`), doubled up to `retryMaxDelay`. */
      retryDelay: duration.optional(),
      /** Longest delay between two attempts of a failed batch (default `30s`). */
      retryMaxDelay: duration.optional(),
    })
    .optional(),
});
export type CustomBlock = z.infer<typeof customBlockSchema>;

/** The JSON schema of a zod schema, in the draft the framework validates with (ajv, draft-07). */
export function frameworkSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
  delete json['$schema'];
  return json;
}

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

export const PLUGIN_DEFAULTS = {
  retryTiers: [...DEFAULTS.retry.tiers] as string[],
  committerSchedule: 'rate(1 minute)',
  committerTimeout: 60,
  offlineBroker: '127.0.0.1:9092',
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
} as const;
