import { Engine } from '../engine/engine';
import { pathParts, type InvocationContext, type InvocationOutcome } from '../engine/run-scope';
import type { RecordHandler } from '../engine/types';
import { decodeKafkaEventLazily, type KafkaBatchResponse, type PartitionBatch, type RecordPrep } from '../event';
import { asProducerWrote } from '../registry/esm-records';
import type { EffectsPort } from '../ports/effects';
import type { CompletionPort } from '../ports/completion';
import type { HandOffSink } from '../ports/handoff';
import type { LanesOptions } from '../options/lanes-options';
import { durationMs } from '../options/duration';
import { retryTierOf } from '../options/names';
import { RetryPath } from '../retry/retry-path';
import { compactResponse, suspendHorizon, type ExecutionWindow, type RoundOutcome } from '../retry/suspend-loop';
import { SourcePath } from '../source/source-path';
import type { Telemetry } from '../telemetry';

/** What `LanesCore` runs on: the engine's ports, not clients. */
export interface LanesCoreParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  /** The completion state (the Redis completion store in production, the in-memory model in tests). */
  readonly store: CompletionPort;
  /** Step results and output claims; without it `ctx.step` and `ctx.send` are refused. */
  readonly effects?: EffectsPort;
  /** The hand-off writer for an event's brokers (`options.kafka.brokers` win when set). */
  readonly handOff: (bootstrapServers: readonly string[]) => HandOffSink;
  readonly telemetry: Telemetry;
  readonly now?: () => number;
}

/**
 * The Lambda function `lanes()` builds, in both its roles, on its ports: an event of the group's source topics runs
 * the source record path, an event of its retry tiers (`<group>.retry.<tier>`) the retry copy path, on one engine
 * (scheduler, per-lane running, timeouts, hand-off, flushing). `LanesFunction` puts it on Redis and Kafka;
 * `kafka-lanes/testing` on the in-memory models.
 *
 * @example
 * const core = new LanesCore({ options, handler, store: new CompletionModelStore(), handOff: () => sink, telemetry });
 * await core.process(event, { getRemainingTimeInMillis: () => 60_000 });
 */
export class LanesCore {
  readonly engine: Engine;
  readonly #handOff: LanesCoreParts['handOff'];
  readonly #group: string;
  readonly #prepare: RecordPrep | undefined;
  readonly #source: SourcePath;
  readonly #retry: RetryPath;
  readonly #now: () => number;

  constructor(parts: LanesCoreParts) {
    this.#handOff = parts.handOff;
    this.#group = parts.options.group;
    const format = parts.options.eventRecordFormat;
    // A trigger with a schema registry integration: its records read as the producer wrote them (esm-records.ts).
    this.#prepare = format === undefined ? undefined : (raw) => asProducerWrote(raw, format);
    this.#now = parts.now ?? Date.now;
    const pathsGiven = pathParts(parts.options, parts.telemetry.logger, parts.now);
    this.#source = new SourcePath(pathsGiven);
    this.#retry = new RetryPath(pathsGiven);
    this.engine = new Engine({
      options: parts.options,
      handler: parts.handler,
      store: parts.store,
      telemetry: parts.telemetry,
      ...(parts.effects === undefined ? {} : { effects: parts.effects }),
      ...(parts.now === undefined ? {} : { clock: { now: parts.now } }),
      paths: pathsGiven,
    });
  }

  /** Processes one Kafka trigger event; throws only for a malformed event or when nothing can be reported. */
  async process(event: unknown, context: InvocationContext): Promise<KafkaBatchResponse> {
    return (await this.#invoke(event, context, undefined)).response;
  }

  /**
   * One round of a durable execution (`suspendLoop`): the event's retry copies not due yet are left waiting for a
   * later round, up to what the execution may wait for (`suspendHorizon`). Source records run as in `process`.
   */
  async round(event: unknown, context: InvocationContext, execution: ExecutionWindow): Promise<RoundOutcome> {
    const startedAtMs = execution.startedAtMs ?? this.#now();
    const outcome = await this.#invoke(event, context, { ...execution, startedAtMs });
    return {
      response: compactResponse(outcome.response),
      ...(outcome.waiting === undefined ? {} : { waiting: outcome.waiting }),
      startedAtMs,
      endedAtMs: this.#now(),
    };
  }

  async #invoke(event: unknown, context: InvocationContext, execution: Required<ExecutionWindow> | undefined): Promise<InvocationOutcome> {
    // Records are decoded when their part of the batch is admitted: the first start before the rest is decoded.
    const decoded = decodeKafkaEventLazily(event, this.#prepare);
    const sink = this.#handOff(decoded.bootstrapServers);
    const sources: PartitionBatch[] = [];
    const retries: PartitionBatch[] = [];
    for (const batch of decoded.partitions) (retryTierOf(this.#group, batch.topic) === undefined ? sources : retries).push(batch);
    const runRetries = (): Promise<InvocationOutcome> => {
      if (execution === undefined) return this.engine.run(this.#retry, retries, sink, context).then((response) => ({ response, waiting: undefined }));
      // One tier per event source; should an emulator mix them, the shortest tier bounds the suspension. A topic named
      // like a tier that is none (its copies are dead-lettered as malformed) bounds nothing.
      const tierMs = Math.min(...retries.map((batch) => durationMs(retryTierOf(this.#group, batch.topic)) ?? 0));
      return this.engine.round(this.#retry, retries, sink, context, suspendHorizon(execution, context.getRemainingTimeInMillis(), tierMs));
    };
    if (retries.length === 0) return { response: await this.engine.run(this.#source, sources, sink, context), waiting: undefined };
    if (sources.length === 0) return runRetries();
    // One event source never mixes them; should an emulator do it, both halves run side by side.
    const settled = await Promise.allSettled([this.engine.run(this.#source, sources, sink, context), runRetries()]);
    const [source, retry] = settled;
    if (source.status === 'rejected') throw source.reason;
    if (retry.status === 'rejected') throw retry.reason;
    return { response: { batchItemFailures: [...source.value.batchItemFailures, ...retry.value.response.batchItemFailures] }, waiting: retry.value.waiting };
  }
}
