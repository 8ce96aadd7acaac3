/**
 * An engine on the in-memory completion model (`CompletionModelStore`) and a recording hand-off sink, for
 * unit tests that drive `Engine.run` with processor batches and retry copies and assert on what ran and on
 * the store's state. No network, no Redis, no Kafka.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { pathParts, type PathParts } from '../../src/engine/run-scope';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Engine, type InvocationContext } from '../../src/engine/engine';
import type { HandOffSink, HandOffItem, HandOffOutcome, OutputMessage } from '../../src/ports/handoff';
import type { LanesContext, LanesRecord, RecordHandler } from '../../src/engine/types';
import { decodeKafkaEvent, decodeKafkaEventLazily, encodeKafkaEvent, type KafkaBatchResponse, type KafkaRecordInput } from '../../src/event';
import { copyRecord } from '../../src/testing/retry-copies';
import { resolveOptions, type LanesOptionsInput } from '../../src/options';
import { SourcePath } from '../../src/source/source-path';
import { RetryPath } from '../../src/retry/retry-path';
import { CompletionModelStore } from '../../src/testing/completion-model';
import { EffectsModel, OutputLog } from '../../src/testing/effects-model';
import type { EffectsPort } from '../../src/ports/effects';

export { copyRecord };

export const RIG_GROUP = 'grp';
export const RIG_SOURCE = 'orders';
/** The source partition every `sourceRecord` lands in. */
export const RIG_REF = { group: RIG_GROUP, topic: RIG_SOURCE, partition: 0 } as const;

/** The lane id of a Kafka key, as the processor derives it in key mode. */
export const laneOf = (key: string): string => Buffer.from(key).toString('base64');

/** A sink that acknowledges every copy and keeps what it was given; outputs go to `outputs`. */
export class RecordingSink implements HandOffSink {
  readonly items: HandOffItem[] = [];
  readonly outputs = new OutputLog();

  send(records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> {
    return this.outputs.send(records);
  }

  async write(items: readonly HandOffItem[]): Promise<HandOffOutcome[]> {
    this.items.push(...items);
    return items.map(() => ({ status: 'written' }));
  }

  /** Takes the retry copies written so far, leaving the dead letters. */
  take(): HandOffItem[] {
    const retries = this.items.filter((item) => item.kind === 'retry');
    this.items.splice(0, this.items.length, ...this.items.filter((item) => item.kind !== 'retry'));
    return retries;
  }
}

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

/** A Lambda context whose deadline is `ms` from now. */
export function within(ms: number): InvocationContext {
  const end = Date.now() + ms;
  return { getRemainingTimeInMillis: () => end - Date.now() };
}

export interface RigRun {
  key: string;
  offset: number;
  attempt: number;
}

export interface Rig {
  engine: Engine;
  /** What the rig's record paths are given (as `LanesCore` gives its own). */
  paths: PathParts;
  store: CompletionModelStore;
  sink: RecordingSink;
  logger: Logger;
  /** Every handler start, in start order. */
  runs: RigRun[];
  /** Delivers source records (a processor batch). */
  deliver(records: readonly KafkaRecordInput[], remainingMs?: number): Promise<KafkaBatchResponse>;
  /** Delivers retry copies, each at its own offset of its tier's partition 0. */
  redeliver(items: readonly HandOffItem[], remainingMs?: number): Promise<KafkaBatchResponse>;
}

/**
 * @example
 * const r = engineRig({ concurrency: 50 }, async (record) => { if (record.origin.offset === 3) throw new Error('x'); });
 * await r.deliver(sourceRecords(3_000, 20));
 */
export function engineRig(
  input: Partial<LanesOptionsInput>,
  handler: (record: LanesRecord, ctx: LanesContext) => unknown,
  store: CompletionModelStore = new CompletionModelStore(),
  effects?: EffectsPort,
): Rig {
  const options = resolveOptions({
    group: RIG_GROUP,
    flushIntervalMs: 10,
    deadlineMarginMs: 1_000,
    retry: { tiers: ['1s', '1m'], maxAttempts: 3, backoff: { type: 'fixed', delayMs: 1 } },
    ...input,
  } as LanesOptionsInput, {});
  const sink = new RecordingSink();
  // One Redis holds both: the done-bit call deletes step results.
  if (effects instanceof EffectsModel) store.stepResults = effects.steps;
  const runs: RigRun[] = [];
  const logger = new Logger({ logLevel: 'SILENT' });
  const metrics = new Metrics({ namespace: 'test', serviceName: 'test' });
  const wrapped: RecordHandler = (record, ctx) => {
    runs.push({ key: String(record.key), offset: record.origin.offset, attempt: ctx.attempt });
    return handler(record, ctx);
  };
  const engine = new Engine({ options, handler: wrapped, store, telemetry: { logger, metrics }, ...(effects === undefined ? {} : { effects }) });
  const paths = pathParts(options, logger);
  const retryOffsets = new Map<string, number>();
  return {
    engine, paths, store, sink, logger, runs,
    deliver: (records, remainingMs = 60_000) => {
      // Decoded as the function decodes an event: a record when its chunk is admitted.
      const decoded = decodeKafkaEventLazily(encodeKafkaEvent({ source: 'SelfManagedKafka', records: [...records] }));
      return engine.run(new SourcePath(paths), decoded.partitions, sink, within(remainingMs));
    },
    redeliver: (items, remainingMs = 60_000) => {
      const records = items.map((item) => {
        const offset = retryOffsets.get(item.topic) ?? 0;
        retryOffsets.set(item.topic, offset + 1);
        return copyRecord(item, offset);
      });
      const decoded = decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
      return engine.run(new RetryPath(paths), decoded.partitions, sink, within(remainingMs));
    },
  };
}

/** One source record of partition 0 at `offset` with Kafka key `key`. */
export function sourceRecord(offset: number, key: string): KafkaRecordInput {
  return { topic: RIG_SOURCE, partition: 0, offset, timestamp: Date.now(), key: Buffer.from(key), value: Buffer.from(JSON.stringify({ offset })) };
}

/** `count` source records at offsets 0.. over keys `k0`..`k<keys-1>` (offset `i` has key `k<i % keys>`). */
export function sourceRecords(count: number, keys: number): KafkaRecordInput[] {
  return Array.from({ length: count }, (_, i) => sourceRecord(i, `k${i % keys}`));
}

/** Delivers every retry copy written until none is left; returns how many rounds it took. */
export async function drainRetries(r: Rig, maxRounds = 20): Promise<number> {
  let rounds = 0;
  for (let items = r.sink.take(); items.length > 0; items = r.sink.take()) {
    rounds += 1;
    if (rounds > maxRounds) throw new Error('retries never settle');
    const response = await r.redeliver(items);
    if (response.batchItemFailures.length > 0) throw new Error(`retry batch not handed off: ${JSON.stringify(response.batchItemFailures)}`);
  }
  return rounds;
}

/** Per key, the offsets in start order (attempt 1 and retries alike). */
export function offsetsByKey(runs: readonly RigRun[]): Map<string, number[]> {
  const byKey = new Map<string, number[]>();
  for (const run of runs) {
    const offsets = byKey.get(run.key);
    if (offsets === undefined) byKey.set(run.key, [run.offset]);
    else offsets.push(run.offset);
  }
  return byKey;
}
