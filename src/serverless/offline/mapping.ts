import { AWS_LIMITS, PLUGIN_DEFAULTS, type CustomBlock } from '../config';
import type { TriggerSettings } from '../types';
import { triggerOf } from '../plan';
import type { EventSourceSpec } from './batching';

export interface OfflineServerless {
  readonly service: {
    readonly provider: { readonly region?: string };
    readonly custom?: Record<string, unknown>;
    getAllFunctions(): string[];
    getFunction(key: string): { events?: Array<Record<string, unknown>>; [other: string]: unknown };
  };
  readonly processedInput?: { readonly options?: Record<string, unknown> };
}

/** One emulated event source mapping: a Kafka trigger of one function. */
export interface MappingSpec {
  readonly functionKey: string;
  readonly topic: string;
  readonly groupId: string;
  readonly batchSize: number;
  readonly batchingWindowMs: number;
  readonly startingPosition: 'LATEST' | 'TRIM_HORIZON' | 'AT_TIMESTAMP';
  readonly startingPositionTimestamp: number | undefined;
  readonly reportBatchItemFailures: boolean;
  /** Where the emulator connects. */
  readonly brokers: readonly string[];
  /** What the event says about its source (an MSK trigger keeps its ARN). */
  readonly eventSource: EventSourceSpec;
  /** An event may hold several partitions' records, as AWS's may (`custom.kafkaLanes.offline.mixPartitions`). */
  readonly mixPartitions: boolean;
  /**
   * The consumer's session timeout (kafkajs' default, 30 s). Invocations do not hold the consumer's fetch loop,
   * which heartbeats all along: an invocation may last longer than the session.
   */
  readonly sessionTimeoutMs: number;
  /**
   * The function is a durable one (its definition has `durableConfig`): each invocation is a durable execution the
   * trigger plays (`playExecution`), lasting at most `executionTimeoutMs`.
   */
  readonly durable?: { readonly executionTimeoutMs: number } | undefined;
}

const KAFKAJS_SESSION_TIMEOUT_MS = 30_000;

/**
 * The event source mappings of a service under `serverless offline`: one per `msk` or `kafka` event (the
 * plugin's retry triggers included). An MSK ARN or a trigger's bootstrap servers map to the local broker
 * through `custom.kafkaLanes.offline.brokers` (default `127.0.0.1:9092`).
 */
export function mappingSpecs(serverless: OfflineServerless, custom: CustomBlock): MappingSpec[] {
  const { service } = serverless;
  const brokersOf = (arn: unknown): string[] => {
    const configured = custom.offline?.brokers;
    if (configured === undefined) return [PLUGIN_DEFAULTS.offlineBroker];
    if (typeof configured === 'string') return [configured];
    const named = typeof arn === 'string' ? configured[arn] : undefined;
    return [named ?? configured['default'] ?? PLUGIN_DEFAULTS.offlineBroker];
  };
  const specs: MappingSpec[] = [];
  for (const functionKey of service.getAllFunctions()) {
    const durable = durableOf(functionKey, service.getFunction(functionKey)['durableConfig']);
    for (const event of service.getFunction(functionKey).events ?? []) {
      const trigger = triggerOf(event);
      if (trigger === undefined || (trigger.settings as { enabled?: unknown }).enabled === false) continue;
      const s: TriggerSettings = trigger.settings;
      if (s['filterPatterns'] !== undefined) {
        // Applying AWS's filter grammar locally would be a second implementation to drift; delivering what AWS
        // would filter out would run the handler on records it never sees deployed. Neither: refused.
        throw new Error(
          `kafka-lanes offline: functions.${functionKey}.events.${trigger.kind}.filterPatterns: expected none under \`serverless offline\` ` +
            '(the offline trigger does not apply event filters), got some; remove them for the local run',
        );
      }
      const brokers = brokersOf(s.arn);
      specs.push({
        functionKey,
        topic: s.topic,
        // AWS names a group after the mapping's UUID when none is given; a stable local name serves as well.
        groupId: s.consumerGroupId ?? `offline-${functionKey}-${s.topic}`,
        batchSize: s.batchSize ?? AWS_LIMITS.defaultBatchSize,
        batchingWindowMs: Math.round((s.maximumBatchingWindow ?? AWS_LIMITS.defaultBatchingWindowSeconds) * 1000),
        startingPosition: (s.startingPosition as MappingSpec['startingPosition'] | undefined) ?? 'TRIM_HORIZON',
        startingPositionTimestamp: s.startingPositionTimestamp,
        reportBatchItemFailures: s.provisionedPollerConfig !== undefined,
        brokers,
        eventSource:
          trigger.kind === 'msk'
            ? { source: 'aws:kafka', eventSourceArn: typeof s.arn === 'string' ? s.arn : `arn:aws:kafka:local:000000000000:cluster/offline/${functionKey}` }
            : { source: 'SelfManagedKafka' },
        mixPartitions: custom.offline?.mixPartitions ?? true,
        sessionTimeoutMs: KAFKAJS_SESSION_TIMEOUT_MS,
        durable,
      });
    }
  }
  return specs;
}

/**
 * A function's `durableConfig` (what the serverless plugin gives a durable retry function, `DurableConfig` of its
 * CloudFormation: `executionTimeout` in seconds), as the offline trigger plays it; `undefined` for a plain function.
 *
 * @throws Error naming the setting when it is there but not a whole number of seconds.
 */
export function durableOf(functionKey: string, config: unknown): MappingSpec['durable'] {
  if (config === undefined || config === null) return undefined;
  const timeout = (config as { executionTimeout?: unknown }).executionTimeout;
  if (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout < 1) {
    throw new Error(
      `kafka-lanes offline: functions.${functionKey}.durableConfig.executionTimeout: expected a whole number of seconds, at least 1, got ${JSON.stringify(timeout) ?? 'nothing'}`,
    );
  }
  return { executionTimeoutMs: timeout * 1000 };
}
