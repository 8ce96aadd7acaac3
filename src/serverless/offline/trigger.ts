import { sleep } from '../../deadline';
import { Kafka, logLevel, type Consumer, type ConsumerConfig } from 'kafkajs';
import type { AwsKafkaEvent } from '../../event/types';
import { topicPartitionKey } from '../../event/topic-partition';
import { kafkaLogCreator } from '../../connections/kafka-log';
import { ENV } from '../../options/constants';
import { durationMs } from '../../options/duration';
import { AWS_LIMITS, PLUGIN_DEFAULTS, type CustomBlock } from '../config';
import type { FunctionPlan } from '../types';
import { awsRecordOfMessage } from '../../event/kafkajs-message';
import { mappingSpecs, type MappingSpec, type OfflineServerless } from './mapping';
import { PartitionQueues, type PartitionQueuesSettings } from './partition-queues';
import { executionReport, leftUncommitted, playExecution, type ExecutionEnd, type FunctionFigures } from './durable-executions';

export type { FunctionFigures } from './durable-executions';
import { roundClientContext } from '../../retry/execution-window';

/** What the trigger needs of serverless-offline's Lambda runtime (`serverless-offline/lambda`). */
export interface OfflineLambda {
  create(lambdas: Array<{ functionKey: string; functionDefinition: unknown }>): void;
  get(functionKey: string): { setEvent(event: unknown): void; setClientContext?(clientContext: unknown): void; runHandler(): Promise<unknown> };
  cleanup(): Promise<unknown>;
}

/** Counters a test or a progress display reads. */
export interface TriggerStats {
  invocations: number;
  failedInvocations: number;
  recordsDelivered: number;
  /** The most invocations ever in flight at once for one partition (the event source allows one). */
  maxInFlightPerPartition: number;
  /** Per function key. */
  functions: Record<string, FunctionFigures>;
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
 *   holds a fetch until 6 MB or the window), holding several partitions' records unless `mixPartitions` is off;
 * - one invocation in flight per partition, partitions independent: the consumer hands each fetched batch to
 *   its partition's queue (`PartitionQueues`), pauses that partition until the queue is empty and goes on
 *   fetching (and heartbeating) for the others, so a slow invocation holds only its own partitions and never
 *   the group membership;
 * - the exact AWS event, run through serverless-offline's own Lambda runtime;
 * - the offsets committed after each successful invocation; on an error the records again after a backoff;
 *   a partial batch response honoured when the mapping reports batch item failures (provisioned mode);
 * - a function with `durableConfig` played as a durable function: each invocation a durable execution whose rounds
 *   run through the same runtime, suspended between them (`playExecution`), committed when the execution ends;
 * - the committers of `kafkaLanes` functions run every `custom.kafkaLanes.offline.committerInterval`.
 * `stop()` lets in-flight invocations finish and commits them; a durable execution waiting between rounds stops
 * waiting at once, its batch left uncommitted (its copies run when the trigger starts again).
 */
export class OfflineKafkaTrigger {
  readonly stats: TriggerStats = { invocations: 0, failedInvocations: 0, recordsDelivered: 0, maxInFlightPerPartition: 0, functions: {} };
  readonly #lambda: OfflineLambda;
  readonly #specs: readonly MappingSpec[];
  readonly #committers: readonly string[];
  readonly #custom: CustomBlock;
  readonly #log: TriggerLog;
  readonly #consumers: Consumer[] = [];
  readonly #queues: PartitionQueues[] = [];
  readonly #inFlight = new Map<string, number>();
  readonly #stopping = new AbortController();
  #committerLoop: Promise<void> | undefined;
  #stopped: Promise<void> | undefined;
  /** Without `--verbose`: the periodic committer runs print no `(λ: <committer>) RequestId ... Duration` line. */
  quietCommitterRuns = false;

  /** `specs`: the Kafka triggers to play; `committers`: the committer functions to run on their interval. */
  constructor(lambda: OfflineLambda, parts: { specs: readonly MappingSpec[]; committers: readonly string[]; custom: CustomBlock; log: TriggerLog }) {
    this.#lambda = lambda;
    ({ specs: this.#specs, committers: this.#committers, custom: this.#custom, log: this.#log } = parts);
  }

  async start(): Promise<void> {
    for (const spec of this.#specs) await this.#startMapping(spec);
    if (this.#committers.length > 0) this.#committerLoop = this.#runCommitters();
    this.#log.notice(
      `kafka-lanes offline: ${this.#specs.length} Kafka trigger(s) running (${this.#specs.map((s) => `${s.functionKey} <- ${s.topic}`).join(', ')})` +
        (this.#committers.length > 0 ? `; committer(s) ${this.#committers.join(', ')} every ${this.#custom.offline?.committerInterval ?? PLUGIN_DEFAULTS.committerInterval}` : ''),
    );
  }

  async #startMapping(spec: MappingSpec): Promise<void> {
    // A coordinator still loading (the first consumer group of a fresh broker) is a retried warning, not an ERROR.
    const kafka = new Kafka({ clientId: `kafka-lanes-offline-${spec.functionKey}`, brokers: [...spec.brokers], logLevel: logLevel.ERROR, logCreator: kafkaLogCreator });
    const consumer = kafka.consumer(consumerConfig(spec));
    // The partitions this member owns, as of its last join: a partition is sought and resumed only while owned.
    let owned = new Set<string>();
    const queues = new PartitionQueues(
      queueSettings(spec, this.#custom),
      {
        invoke: (event, partitions) => this.#invoke(spec, partitions, event),
        commit: (offsets) => consumer.commitOffsets(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) }))),
        release: (topic, partition, offset) => {
          if (!owned.has(topicPartitionKey(topic, partition))) return;
          // The consumer reads on from the queue's end (it resolves nothing itself), then the partition joins the fetches again.
          consumer.seek({ topic, partition, offset: String(offset) });
          consumer.resume([{ topic, partitions: [partition] }]);
        },
        warning: (message) => this.#log.warning(message),
      },
    );
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      owned = new Set((payload.memberAssignment[spec.topic] ?? []).map((partition) => topicPartitionKey(spec.topic, partition)));
      const dropped = queues.assign(owned);
      // Paused while their queue held records; a later assignment of them fetches from the group's commit.
      if (dropped.length > 0) consumer.resume([{ topic: spec.topic, partitions: dropped.map((d) => d.partition) }]);
    });
    await consumer.connect();
    await consumer.subscribe({ topic: spec.topic, fromBeginning: spec.startingPosition !== 'LATEST' });
    if (spec.startingPosition === 'AT_TIMESTAMP' && spec.startingPositionTimestamp !== undefined) {
      await this.#seekToTimestamp(kafka, consumer, spec);
    }
    this.#consumers.push(consumer);
    this.#queues.push(queues);
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Every batch of a fetch handed over at once, so that one event can gather them.
      partitionsConsumedConcurrently: 64,
      eachBatch: async ({ batch, pause }) => {
        const records = batch.messages.map((message) => awsRecordOfMessage(batch.topic, batch.partition, message));
        if (records.length === 0) return;
        pause();
        queues.add(batch.topic, batch.partition, records);
      },
    });
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

  async #invoke(spec: MappingSpec, partitions: readonly string[], event: AwsKafkaEvent): Promise<{ response?: unknown; error?: unknown; left?: true }> {
    const ids = partitions.map((partition) => `${spec.groupId}/${partition}`);
    for (const id of ids) {
      const inFlight = (this.#inFlight.get(id) ?? 0) + 1;
      this.#inFlight.set(id, inFlight);
      this.stats.maxInFlightPerPartition = Math.max(this.stats.maxInFlightPerPartition, inFlight);
    }
    this.stats.recordsDelivered += Object.values(event.records).reduce((n, list) => n + list.length, 0);
    try {
      if (spec.durable === undefined) return await this.#run(spec.functionKey, event, null);
      const end = await playExecution({
        runRound: async (execution) => {
          const { response, error } = await this.#run(spec.functionKey, event, roundClientContext(execution));
          if (error !== undefined) throw error;
          return response;
        },
        stopSignal: this.#stopping.signal,
        timeoutMs: spec.durable.executionTimeoutMs,
      });
      this.#executed(spec.functionKey, partitions, end);
      if (end.kind === 'left') return { left: true };
      return end.kind === 'answered' ? { response: end.response } : { error: end.error };
    } finally {
      for (const id of ids) this.#inFlight.set(id, (this.#inFlight.get(id) ?? 1) - 1);
    }
  }

  /** One invocation through serverless-offline's runtime, billed as Lambda bills it. */
  async #run(functionKey: string, event: AwsKafkaEvent, clientContext: unknown): Promise<{ response?: unknown; error?: unknown }> {
    this.stats.invocations += 1;
    const figures = this.#figures(functionKey);
    figures.invocations += 1;
    const started = performance.now();
    try {
      // get, setEvent and runHandler in one synchronous step: runHandler marks the instance busy at once,
      // so a concurrent get() for another partition never receives the same instance.
      const fn = this.#lambda.get(functionKey);
      // Every time: an instance keeps the client context it was last given.
      fn.setClientContext?.(clientContext);
      fn.setEvent(event);
      return { response: await fn.runHandler() };
    } catch (error) {
      this.stats.failedInvocations += 1;
      return { error: error ?? new Error('invocation failed') };
    } finally {
      figures.billedMs += Math.ceil(performance.now() - started);
    }
  }

  #figures(functionKey: string): FunctionFigures {
    return (this.stats.functions[functionKey] ??= { invocations: 0, billedMs: 0, executions: 0, suspendedMs: 0 });
  }

  /** A durable execution ended: its REPORT line, and what the stop left uncommitted. */
  #executed(functionKey: string, partitions: readonly string[], end: ExecutionEnd): void {
    const figures = this.#figures(functionKey);
    figures.executions += 1;
    figures.suspendedMs += end.figures.suspendedMs;
    this.#log.notice(executionReport(functionKey, figures.executions, end));
    if (end.kind === 'left') this.#log.notice(leftUncommitted(functionKey, partitions, end.waiting));
  }

  async #runCommitters(): Promise<void> {
    const interval = durationMs(this.#custom.offline?.committerInterval ?? PLUGIN_DEFAULTS.committerInterval) ?? 5_000;
    while (!this.#stopping.signal.aborted) {
      await sleep(interval, this.#stopping.signal);
      if (this.#stopping.signal.aborted) break;
      if (this.quietCommitterRuns) await withoutLines(this.#committers.map((key) => `(λ: ${key}) RequestId:`), () => this.runCommitters());
      else await this.runCommitters();
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

  /**
   * Starts no more invocations, lets those in flight finish and commit, runs the committers a last time. A durable
   * execution waiting between rounds is not waited for: its batch stays uncommitted (said in the log).
   */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#stopping.abort();
      // The consumers stay in their groups until the last invocations have committed (or were left waiting).
      await Promise.all(this.#queues.map((queues) => queues.drain()));
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
  // Without brokers of their own, a group's producers (handler and retry function) and committer use the local broker its trigger maps to.
  for (const plan of plans) {
    const source = specs.find((spec) => spec.functionKey === plan.functionKey);
    for (const key of [plan.functionKey, plan.retry.key, ...(plan.committer === undefined ? [] : [plan.committer.key])]) {
      const fn = serverless.service.getFunction(key) as { environment?: Record<string, unknown> };
      if (source !== undefined && fn.environment?.[ENV.brokers] === undefined) fn.environment = { ...fn.environment, [ENV.brokers]: source.brokers.join(',') };
    }
  }
  const committers = plans.flatMap((plan) => (plan.committer === undefined ? [] : [plan.committer.key]));
  quietCommitters(serverless, committers);
  const lambda = options.lambda ?? (await createLambda(serverless));
  // The emulator runs the committers on its short interval; serverless-offline's minute schedule would repeat it.
  for (const key of committers) {
    for (const event of serverless.service.getFunction(key).events ?? []) {
      const schedule = event['schedule'];
      if (typeof schedule === 'object' && schedule !== null) (schedule as { enabled?: boolean }).enabled = false;
    }
  }
  const trigger = new OfflineKafkaTrigger(lambda, { specs, committers, custom, log });
  trigger.quietCommitterRuns = serverless.processedInput?.options?.['verbose'] !== true;
  await trigger.start();
  if (options.holdExit) holdExitUntilStopped(trigger);
  else for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void trigger.stop());
  return trigger;
}

/**
 * Runs `work` with every line written to stdout or stderr that contains one of `markers` left out: serverless-offline
 * prints one `(λ: <function>) RequestId ... Duration` line per handler run (its `log.notice`, no switch to turn it
 * off), which for a committer run every few seconds is all an idle `serverless offline` would print.
 */
export async function withoutLines<T>(markers: readonly string[], work: () => Promise<T>): Promise<T> {
  const streams = [process.stdout, process.stderr];
  const writes = streams.map((stream) => stream.write);
  streams.forEach((stream, index) => {
    const write = writes[index]!;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : undefined;
      if (text === undefined || !markers.some((marker) => text.includes(marker))) return (write as (...args: unknown[]) => boolean).call(stream, chunk, ...rest);
      const kept = text.split('\n').filter((line) => !markers.some((marker) => line.includes(marker))).join('\n');
      return kept.trim() === '' ? true : (write as (...args: unknown[]) => boolean).call(stream, kept, ...rest);
    }) as typeof stream.write;
  });
  try {
    return await work();
  } finally {
    streams.forEach((stream, index) => (stream.write = writes[index]!));
  }
}

/** The environment of a committer under `serverless offline` without `--verbose`: Powertools' own switches. */
export const QUIET_COMMITTER_ENV: Readonly<Record<string, string>> = { POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'WARN' };

/**
 * Idle, each committer run would print its CloudWatch metric lines and its run summary every interval. Locally the
 * metric lines mean nothing and the summary is noise: unless `serverless offline start --verbose`, the committers
 * print warnings and errors only (a loss found, a failed run). A function's own setting of these variables wins.
 */
export function quietCommitters(serverless: Pick<OfflineServerless, 'service' | 'processedInput'>, committers: readonly string[]): void {
  if (serverless.processedInput?.options?.['verbose'] === true) return;
  for (const key of committers) {
    const fn = serverless.service.getFunction(key) as { environment?: Record<string, unknown> };
    fn.environment = { ...QUIET_COMMITTER_ENV, ...fn.environment };
  }
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

/** The consumer of one mapping, fetching as Lambda's event source poller does. */
function consumerConfig(spec: MappingSpec): ConsumerConfig {
  return {
    groupId: spec.groupId,
    // The broker answers a fetch once 6 MB are there or the batching window has passed: Lambda's window.
    maxWaitTimeInMs: Math.max(spec.batchingWindowMs, 10),
    minBytes: spec.batchingWindowMs > 0 ? AWS_LIMITS.maxPayloadBytes : 1,
    maxBytesPerPartition: AWS_LIMITS.maxPayloadBytes,
    maxBytes: 4 * AWS_LIMITS.maxPayloadBytes,
    sessionTimeout: spec.sessionTimeoutMs,
    heartbeatInterval: Math.min(3_000, Math.floor(spec.sessionTimeoutMs / 3)),
  };
}

/** How one mapping's partition queues batch and resend, from its spec and the plugin's `offline` block. */
function queueSettings(spec: MappingSpec, custom: CustomBlock): PartitionQueuesSettings {
  return {
    functionKey: spec.functionKey,
    eventSource: spec.eventSource,
    bootstrapServers: spec.brokers,
    mixPartitions: spec.mixPartitions,
    reportBatchItemFailures: spec.reportBatchItemFailures,
    batchSize: spec.batchSize,
    maxPayloadBytes: AWS_LIMITS.maxPayloadBytes,
    retryDelayMs: durationMs(custom.offline?.retryDelay ?? PLUGIN_DEFAULTS.retryDelay) ?? 1_000,
    retryMaxDelayMs: durationMs(custom.offline?.retryMaxDelay ?? PLUGIN_DEFAULTS.retryMaxDelay) ?? 30_000,
  };
}
