import { sleep } from '../../deadline';
import { Kafka, logLevel, type Consumer, type EachBatchPayload, type KafkaMessage } from 'kafkajs';
import { encodeKafkaRecord } from '../../event/encode';
import type { AwsKafkaRecord } from '../../event/types';
import { ENV } from '../../options/constants';
import { durationMs } from '../../options/duration';
import { AWS_LIMITS, PLUGIN_DEFAULTS, type CustomBlock } from '../config';
import type { FunctionPlan, TriggerSettings } from '../plan';
import { triggerOf } from '../plan';
import { cutBatches, readOutcome, retryDelayMs, type EventSourceSpec } from './batching';

/** What the trigger needs of serverless-offline's Lambda runtime (`serverless-offline/lambda`). */
export interface OfflineLambda {
  create(lambdas: Array<{ functionKey: string; functionDefinition: unknown }>): void;
  get(functionKey: string): { setEvent(event: unknown): void; runHandler(): Promise<unknown> };
  cleanup(): Promise<unknown>;
}

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
}

/** Counters a test or a progress display reads. */
export interface TriggerStats {
  invocations: number;
  failedInvocations: number;
  recordsDelivered: number;
  /** The most invocations ever in flight at once for one partition (the event source allows one). */
  maxInFlightPerPartition: number;
}

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
      });
    }
  }
  return specs;
}

/** Turns a kafkajs message into the record AWS would put in the event. */
export function awsRecordOf(topic: string, partition: number, message: KafkaMessage): AwsKafkaRecord {
  const headers: Array<{ name: string; value: Uint8Array }> = [];
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    // kafkajs gathers repeated header names into an array; AWS keeps each as its own entry.
    for (const one of Array.isArray(value) ? value : [value]) {
      if (one !== undefined) headers.push({ name, value: typeof one === 'string' ? Buffer.from(one) : one });
    }
  }
  const context = (message as KafkaMessage & { batchContext?: { timestampType?: number } }).batchContext;
  return encodeKafkaRecord({
    topic,
    partition,
    offset: Number(message.offset),
    timestamp: Number(message.timestamp),
    timestampType: context?.timestampType === 1 ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    key: message.key,
    value: message.value,
    headers,
  });
}

export interface TriggerLog {
  notice(message: string): void;
  warning(message: string): void;
}

export interface StartOfflineTriggerOptions {
  readonly serverless: OfflineServerless;
  readonly custom: CustomBlock;
  readonly plans: readonly FunctionPlan[];
  readonly log: TriggerLog;
  /** Keep the process alive (hold `process.exit`) until the trigger has stopped, after SIGINT / SIGTERM. */
  readonly holdExit: boolean;
  /** serverless-offline's runtime; default: a new one from `serverless-offline/lambda`. */
  readonly lambda?: OfflineLambda;
}

/**
 * Plays the service's Kafka triggers against a local broker, the way Lambda's event source mapping does:
 * - a kafkajs consumer per mapping, in the mapping's consumer group, from `startingPosition`;
 * - events of at most `batchSize` records and 6 MB, gathered for up to `maximumBatchingWindow` (the broker
 *   holds a fetch until 6 MB or the window), one partition per event;
 * - one invocation in flight per partition, partitions in parallel;
 * - the exact AWS event, run through serverless-offline's own Lambda runtime;
 * - the offset committed after each successful invocation; on an error the whole batch again after a backoff;
 *   a partial batch response honoured when the mapping reports batch item failures (provisioned mode);
 * - the committers of `kafkaLanes` functions run every `custom.kafkaLanes.offline.committerInterval`.
 * `stop()` lets in-flight invocations finish and commits them.
 */
export class OfflineKafkaTrigger {
  readonly stats: TriggerStats = { invocations: 0, failedInvocations: 0, recordsDelivered: 0, maxInFlightPerPartition: 0 };
  readonly #lambda: OfflineLambda;
  readonly #specs: readonly MappingSpec[];
  readonly #committers: readonly string[];
  readonly #custom: CustomBlock;
  readonly #log: TriggerLog;
  readonly #consumers: Consumer[] = [];
  readonly #inFlight = new Map<string, number>();
  readonly #stopping = new AbortController();
  #committerLoop: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;

  constructor(lambda: OfflineLambda, specs: readonly MappingSpec[], committers: readonly string[], custom: CustomBlock, log: TriggerLog) {
    this.#lambda = lambda;
    this.#specs = specs;
    this.#committers = committers;
    this.#custom = custom;
    this.#log = log;
  }

  async start(): Promise<void> {
    for (const spec of this.#specs) {
      const consumer = await this.#startMapping(spec);
      this.#consumers.push(consumer);
    }
    if (this.#committers.length > 0) this.#committerLoop = this.#runCommitters();
    this.#log.notice(
      `kafka-lanes offline: ${this.#specs.length} Kafka trigger(s) running (${this.#specs.map((s) => `${s.functionKey} <- ${s.topic}`).join(', ')})` +
        (this.#committers.length > 0 ? `; committer(s) ${this.#committers.join(', ')} every ${this.#custom.offline?.committerInterval ?? PLUGIN_DEFAULTS.committerInterval}` : ''),
    );
  }

  async #startMapping(spec: MappingSpec): Promise<Consumer> {
    const kafka = new Kafka({ clientId: `kafka-lanes-offline-${spec.functionKey}`, brokers: [...spec.brokers], logLevel: logLevel.ERROR });
    const consumer = kafka.consumer({
      groupId: spec.groupId,
      // The broker answers a fetch once 6 MB are there or the batching window has passed: Lambda's window.
      maxWaitTimeInMs: Math.max(spec.batchingWindowMs, 10),
      minBytes: spec.batchingWindowMs > 0 ? AWS_LIMITS.maxPayloadBytes : 1,
      maxBytesPerPartition: AWS_LIMITS.maxPayloadBytes,
      maxBytes: 4 * AWS_LIMITS.maxPayloadBytes,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: spec.topic, fromBeginning: spec.startingPosition !== 'LATEST' });
    if (spec.startingPosition === 'AT_TIMESTAMP' && spec.startingPositionTimestamp !== undefined) {
      await this.#seekToTimestamp(kafka, consumer, spec);
    }
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Partitions in parallel; kafkajs never hands out two batches of one partition at once.
      partitionsConsumedConcurrently: 64,
      eachBatch: (payload) => this.#deliver(spec, consumer, payload),
    });
    return consumer;
  }

  async #seekToTimestamp(kafka: Kafka, consumer: Consumer, spec: MappingSpec): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const committed = await admin.fetchOffsets({ groupId: spec.groupId, topics: [spec.topic] });
      const hasCommitted = committed.some((t) => t.partitions.some((p) => Number(p.offset) >= 0));
      if (hasCommitted) return;
      const offsets = await admin.fetchTopicOffsetsByTimestamp(spec.topic, spec.startingPositionTimestamp);
      // Once: at the first join the group has no offsets; a later rejoin (a rebalance) resumes from what it committed.
      const remove = consumer.on(consumer.events.GROUP_JOIN, () => {
        remove();
        for (const { partition, offset } of offsets) consumer.seek({ topic: spec.topic, partition, offset });
      });
    } finally {
      await admin.disconnect();
    }
  }

  async #deliver(spec: MappingSpec, consumer: Consumer, payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    const partitionId = `${spec.groupId}/${batch.topic}-${batch.partition}`;
    let pending = batch.messages.map((message) => awsRecordOf(batch.topic, batch.partition, message));
    let attempt = 0;
    const retryDelay = durationMs(this.#custom.offline?.retryDelay ?? PLUGIN_DEFAULTS.retryDelay) ?? 1_000;
    const retryMaxDelay = durationMs(this.#custom.offline?.retryMaxDelay ?? PLUGIN_DEFAULTS.retryMaxDelay) ?? 30_000;
    while (pending.length > 0 && isRunning() && !isStale()) {
      const [next] = cutBatches(pending, spec.eventSource, spec.brokers, { batchSize: spec.batchSize, maxPayloadBytes: AWS_LIMITS.maxPayloadBytes });
      if (next === undefined) break;
      if (next.bytes > AWS_LIMITS.maxPayloadBytes) {
        this.#log.warning(`kafka-lanes offline: ${batch.topic}-${batch.partition} offset ${next.records[0]?.offset} exceeds 6 MB; Lambda could not deliver it`);
      }
      const { response, error } = await this.#invoke(spec.functionKey, partitionId, next.event);
      const outcome = readOutcome(response, error, next.records, spec.reportBatchItemFailures);
      const done = outcome.kind === 'success' ? next.records : next.records.filter((record) => record.offset < outcome.offset);
      const last = done[done.length - 1];
      if (last !== undefined) {
        resolveOffset(String(last.offset));
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(last.offset + 1) }]);
        pending = pending.slice(done.length);
      }
      if (outcome.kind === 'success') {
        attempt = 0;
        continue;
      }
      attempt += 1;
      const delay = retryDelayMs(attempt, retryDelay, retryMaxDelay);
      this.#log.warning(
        `kafka-lanes offline: ${spec.functionKey} ${batch.topic}-${batch.partition} from offset ${outcome.offset}: ${outcome.reason}; sending the batch again in ${delay} ms`,
      );
      await this.#pause(delay, heartbeat);
    }
  }

  async #pause(ms: number, heartbeat: () => Promise<void>): Promise<void> {
    const until = Date.now() + ms;
    while (!this.#stopping.signal.aborted && Date.now() < until) {
      await sleep(Math.min(1_000, until - Date.now()), this.#stopping.signal);
      await heartbeat().catch(() => undefined);
    }
  }

  async #invoke(functionKey: string, partitionId: string, event: unknown): Promise<{ response?: unknown; error?: unknown }> {
    const inFlight = (this.#inFlight.get(partitionId) ?? 0) + 1;
    this.#inFlight.set(partitionId, inFlight);
    this.stats.maxInFlightPerPartition = Math.max(this.stats.maxInFlightPerPartition, inFlight);
    this.stats.invocations += 1;
    this.stats.recordsDelivered += Object.values((event as { records: Record<string, unknown[]> }).records).reduce((n, list) => n + list.length, 0);
    try {
      // get, setEvent and runHandler in one synchronous step: runHandler marks the instance busy at once,
      // so a concurrent get() for another partition never receives the same instance.
      const fn = this.#lambda.get(functionKey);
      fn.setEvent(event);
      return { response: await fn.runHandler() };
    } catch (error) {
      this.stats.failedInvocations += 1;
      return { error: error ?? new Error('invocation failed') };
    } finally {
      this.#inFlight.set(partitionId, (this.#inFlight.get(partitionId) ?? 1) - 1);
    }
  }

  async #runCommitters(): Promise<void> {
    const interval = durationMs(this.#custom.offline?.committerInterval ?? PLUGIN_DEFAULTS.committerInterval) ?? 5_000;
    while (!this.#stopping.signal.aborted) {
      await sleep(interval, this.#stopping.signal);
      if (!this.#stopping.signal.aborted) await this.runCommitters();
    }
  }

  /** Runs every committer once, through serverless-offline's runtime (also the last step of `stop`). */
  async runCommitters(): Promise<void> {
    for (const key of this.#committers) {
      try {
        const fn = this.#lambda.get(key);
        fn.setEvent({ 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} });
        await fn.runHandler();
      } catch (error) {
        this.#log.warning(`kafka-lanes offline: committer ${key} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Stops polling, lets in-flight invocations finish and commit, runs the committers a last time. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#stopping.abort();
      // kafkajs' stop waits for the batches being processed: their invocations finish and commit.
      await Promise.all(this.#consumers.map((consumer) => consumer.disconnect()));
      await this.#committerLoop;
      await this.runCommitters();
      await this.#lambda.cleanup();
      this.#log.notice('kafka-lanes offline: Kafka triggers stopped, offsets committed');
    })();
    return this.#stopped;
  }
}

/**
 * Starts the offline trigger of a service with serverless-offline's Lambda runtime. With `holdExit`, Ctrl-C
 * (SIGINT) or SIGTERM stops it and `process.exit` waits until it has stopped.
 */
export async function startOfflineTrigger(options: StartOfflineTriggerOptions): Promise<OfflineKafkaTrigger> {
  const { serverless, custom, plans, log } = options;
  const specs = mappingSpecs(serverless, custom);
  // Without brokers of their own, a group's producers and committer use the local broker its trigger maps to.
  for (const plan of plans) {
    const source = specs.find((spec) => spec.functionKey === plan.functionKey);
    for (const key of [plan.functionKey, ...(plan.committer === undefined ? [] : [plan.committer.key])]) {
      const fn = serverless.service.getFunction(key) as { environment?: Record<string, unknown> };
      if (source !== undefined && fn.environment?.[ENV.brokers] === undefined) fn.environment = { ...fn.environment, [ENV.brokers]: source.brokers.join(',') };
    }
  }
  const lambda = options.lambda ?? (await createLambda(serverless));
  const committers = plans.flatMap((plan) => (plan.committer === undefined ? [] : [plan.committer.key]));
  // The emulator runs the committers on its short interval; serverless-offline's minute schedule would repeat it.
  for (const key of committers) {
    for (const event of serverless.service.getFunction(key).events ?? []) {
      const schedule = event['schedule'];
      if (typeof schedule === 'object' && schedule !== null) (schedule as { enabled?: boolean }).enabled = false;
    }
  }
  const trigger = new OfflineKafkaTrigger(lambda, specs, committers, custom, log);
  await trigger.start();
  if (options.holdExit) holdExitUntilStopped(trigger);
  else for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void trigger.stop());
  return trigger;
}

function holdExitUntilStopped(trigger: OfflineKafkaTrigger): void {
  const exit = process.exit.bind(process);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= trigger.stop().catch(() => undefined));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop());
  process.exit = ((code?: number) => {
    void stop().then(() => exit(code));
    return undefined as never;
  }) as typeof process.exit;
}

async function createLambda(serverless: OfflineServerless): Promise<OfflineLambda> {
  // An ES module without types; Node.js 22 loads it from CommonJS too.
  const specifier = 'serverless-offline/lambda';
  const { default: Lambda } = (await import(specifier)) as {
    default: new (serverless: unknown, options: Record<string, unknown>) => OfflineLambda;
  };
  const custom = (serverless.service.custom?.['serverless-offline'] ?? {}) as Record<string, unknown>;
  // serverless-offline's own defaults for what its Lambda runtime reads; its options (custom and CLI) win.
  const options = { host: 'localhost', lambdaPort: 3002, terminateIdleLambdaTime: 60, noTimeout: false, ...custom, ...serverless.processedInput?.options };
  const lambda = new Lambda(serverless, options);
  lambda.create(
    serverless.service.getAllFunctions().map((functionKey) => ({ functionKey, functionDefinition: serverless.service.getFunction(functionKey) })),
  );
  return lambda;
}
