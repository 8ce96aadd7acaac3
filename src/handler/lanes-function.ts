import type { Cluster, Redis } from 'ioredis';
import { CompletionStore } from '../completion';
import { RedisEffects } from '../effects/redis-effects';
import { Engine } from '../engine/engine';
import type { InvocationContext } from '../engine/run-scope';
import type { HandOffSink } from '../lanes/ports';
import type { RecordHandler } from '../engine/types';
import { decodeKafkaEvent, type KafkaBatchResponse, type PartitionBatch } from '../event';
import type { LanesOptions } from '../options/lanes-options';
import { retryTierOf } from '../options/names';
import { RetryPath } from '../retry/retry-path';
import { SourcePath } from '../source/source-path';
import type { Telemetry } from '../telemetry';

export { BatchNotHandedOffError, DeadlineError, RecordTimeoutError } from '../errors';
export { quantiles } from '../engine/run-report';
export type { InvocationContext } from '../engine/run-scope';
export type { HandOffSink } from '../lanes/ports';
export type { LanesContext, LanesRecord, RecordHandler } from '../engine/types';

export interface LanesFunctionParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  readonly redis: Redis | Cluster;
  /** The hand-off writer for an event's brokers (`options.kafka.brokers` win when set). */
  readonly handOff: (bootstrapServers: readonly string[]) => HandOffSink;
  readonly telemetry: Telemetry;
  readonly now?: () => number;
}

/**
 * The Lambda function `lanes()` builds, in both its roles: an event of the group's source topics runs the
 * source record path, an event of its retry tiers (`<group>.retry.<tier>`) the retry copy path, on one engine
 * (scheduler, per-lane running, timeouts, hand-off, flushing). One instance per function (module scope),
 * `process` per invocation.
 *
 * @example
 * const fn = new LanesFunction({ options, handler, redis, handOff, telemetry });
 * export const main = (event: unknown, context: Context) => fn.process(event, context);
 */
export class LanesFunction {
  readonly parts: LanesFunctionParts;
  readonly store: CompletionStore;
  readonly engine: Engine;
  readonly #source = new SourcePath();
  readonly #retry = new RetryPath();

  constructor(parts: LanesFunctionParts) {
    this.parts = parts;
    this.store = new CompletionStore(parts.redis, parts.options.caps);
    this.engine = new Engine({
      options: parts.options,
      handler: parts.handler,
      store: this.store,
      telemetry: parts.telemetry,
      effects: new RedisEffects(parts.redis),
      ...(parts.now === undefined ? {} : { clock: { now: parts.now } }),
    });
  }

  /** Processes one Kafka trigger event; throws only for a malformed event or when nothing can be reported. */
  async process(event: unknown, context: InvocationContext): Promise<KafkaBatchResponse> {
    const decoded = decodeKafkaEvent(event);
    const sink = this.parts.handOff(decoded.bootstrapServers);
    const { group } = this.parts.options;
    const sources: PartitionBatch[] = [];
    const retries: PartitionBatch[] = [];
    for (const batch of decoded.partitions) (retryTierOf(group, batch.topic) === undefined ? sources : retries).push(batch);
    if (retries.length === 0) return this.engine.run(this.#source, sources, sink, context);
    if (sources.length === 0) return this.engine.run(this.#retry, retries, sink, context);
    // One event source never mixes them; should an emulator do it, both halves run side by side.
    const settled = await Promise.allSettled([
      this.engine.run(this.#source, sources, sink, context),
      this.engine.run(this.#retry, retries, sink, context),
    ]);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return {
      batchItemFailures: settled.flatMap((s) => (s.status === 'fulfilled' ? s.value.batchItemFailures : [])),
    };
  }
}
