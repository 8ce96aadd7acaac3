/**
 * Randomized histories of steps and outputs: one partition of source records, each handler running its steps (each
 * with an effect counted outside the framework) and sending outputs, some failing once after a step, and containers
 * that die at a random event: an effect run (inside its step, before its result is stored), a step result stored,
 * or a record's outputs acknowledged (before its done bit is flushed). A dead container does nothing more: its
 * store, effects and broker calls never answer, its step functions never return. The batch and the retry copies
 * are delivered again by fresh containers until every record is done. Unordered mode: see `runEffectsHistory`.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { pathParts, type PathParts } from '../../src/engine/run-scope';
import { Metrics } from '@aws-lambda-powertools/metrics';
import fc from 'fast-check';
import type { PartitionRef } from '../../src/ports/partition';
import { Engine } from '../../src/engine/engine';
import type { CompletionPort } from '../../src/ports/completion';
import type { HandOffSink, OutputMessage, HandOffItem } from '../../src/ports/handoff';
import { OUTPUT_HEADER } from '../../src/lanes/effects';
import { parseOutputId } from '../../src/engine/outputs';
import type { LanesContext, LanesRecord } from '../../src/engine/types';
import { decodeKafkaEvent, decodeKafkaEventLazily, encodeKafkaEvent, type KafkaRecordInput } from '../../src/event';
import { resolveOptions } from '../../src/options';
import { SourcePath } from '../../src/source/source-path';
import { RetryPath } from '../../src/retry/retry-path';
import { CompletionModelStore } from '../../src/testing/completion-model';
import { EffectsModel } from '../../src/testing/effects-model';
import { copyRecord, RIG_GROUP, RIG_REF, sourceRecord, within } from './engine-rig';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';

export interface EffectsHistory {
  /** Per record: how many steps and outputs its handler has, and after which step its first attempt fails (if any). */
  readonly records: ReadonlyArray<{ readonly steps: number; readonly outputs: number; readonly failAfter?: number }>;
  readonly keys: number;
  /** Per container, the event at which it dies (none: it lives). */
  readonly crashes: ReadonlyArray<number | undefined>;
}

export const effectsHistoryArb: fc.Arbitrary<EffectsHistory> = fc.record({
  records: fc.array(fc.record({
    steps: fc.integer({ min: 0, max: 3 }),
    outputs: fc.integer({ min: 0, max: 2 }),
    failAfter: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  }), { minLength: 1, maxLength: 12 }),
  keys: fc.integer({ min: 1, max: 4 }),
  crashes: fc.array(fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined, freq: 2 }), { maxLength: 4 }),
});

/** One container's life: dead once its event counter reaches `crashAt`; a dead container's calls never answer. */
class Gate {
  #events = 0;
  dead = false;
  readonly #crashAt: number | undefined;
  readonly died: Promise<void>;
  #die: () => void = () => undefined;
  /** Rejects every call of the dead container once the history is over, so its invocation ends and its timers stop. */
  #buried: Promise<never>;
  bury: () => void = () => undefined;

  constructor(crashAt: number | undefined) {
    this.#crashAt = crashAt;
    this.died = new Promise((resolve) => {
      this.#die = resolve;
    });
    this.#buried = new Promise<never>((_, reject) => {
      this.bury = () => reject(new Error('container gone'));
    });
    this.#buried.catch(() => undefined);
  }

  /** One more event; the container dies as it happens when it is the one. */
  event(): void {
    if (this.dead) return;
    this.#events += 1;
    if (this.#events === this.#crashAt) {
      this.dead = true;
      this.#die();
    }
  }

  /** What a dead container's call gets: no answer until the history is over. */
  hang<T>(): Promise<T> {
    return this.#buried;
  }

  async pass<T>(work: () => Promise<T>): Promise<T> {
    if (this.dead) return this.hang<T>();
    const result = await work();
    if (this.dead) return this.hang<T>();
    return result;
  }
}

export interface EffectsHistoryResult {
  /** (offset, step) → effect runs. */
  readonly effects: Map<string, number>;
  /** (offset, step) → effect runs cut off by a crash before the step's result was stored. */
  readonly cutInside: Map<string, number>;
  readonly outputs: readonly OutputMessage[];
  readonly crashed: number;
  /** Outputs of a record missing when its done bit was set after it succeeded. */
  readonly doneBeforeOutputs: number[];
  /** Step functions that ran although the step's result was stored already. */
  readonly completedStepRanAgain: string[];
}

export async function runEffectsHistory(history: EffectsHistory): Promise<EffectsHistoryResult> {
  const store = new CompletionModelStore();
  const effectsState = new EffectsModel();
  store.stepResults = effectsState.steps;
  // Half the histories start on a store that has seen steps (a warm process): records delivered for the first time
  // then skip reading their steps; the other half read them, as a process's first invocation does.
  if (history.records.length % 2 === 0) await effectsState.saveStep({ ref: { ...RIG_REF, topic: 'warm-up' }, offset: 0 }, 'warm', '1');
  const outputs: OutputMessage[] = [];
  const copies: Array<{ item: HandOffItem; offset: number }> = [];
  const effects = new Map<string, number>();
  const cutInside = new Map<string, number>();
  const saved = new Set<string>();
  const doneBeforeOutputs: number[] = [];
  const completedStepRanAgain: string[] = [];
  const records: KafkaRecordInput[] = history.records.map((_, i) => sourceRecord(i, `k${i % history.keys}`));
  const succeeded = new Set<number>();
  const options = resolveOptions({
    // Unordered: a crash never strands a lane head drained inline (that waits for the committer's re-drive, which
    // the engine histories of history-rig.ts cover); retry copies go through the (origin, attempt) claim instead.
    group: RIG_GROUP, ordering: 'unordered', flushIntervalMs: 5, deadlineMarginMs: 1_000,
    retry: { tiers: ['1s'], maxAttempts: 5, backoff: { type: 'fixed', delayMs: 1 } },
  }, {});
  const logger = new Logger({ logLevel: 'SILENT' });
  const metrics = new Metrics({ namespace: 'test', serviceName: 'test' });
  let crashed = 0;

  const container = (crashAt: number | undefined): { engine: Engine; paths: PathParts; sink: HandOffSink; gate: Gate; running: Map<string, boolean> } => {
    const gate = new Gate(crashAt);
    const running = new Map<string, boolean>();
    const port: CompletionPort = new Proxy(store, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (typeof value !== 'function') return value;
        if (name === 'withLimits') return () => port;
        return (...args: unknown[]) => gate.pass(async () => {
          if (name === 'markDone' && (args[0] as PartitionRef).topic === RIG_REF.topic) {
            for (const offset of args[1] as number[]) {
              const spec = history.records[offset]!;
              const sent = outputs.filter((o) => {
                const origin = parseOutputId(String(o.headers[OUTPUT_HEADER]))?.origin;
                return origin?.topic === RIG_REF.topic && origin.partition === 0 && origin.offset === offset;
              }).length;
              if (spec.failAfter === undefined && sent < spec.outputs) doneBeforeOutputs.push(offset);
            }
          }
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        });
      },
    }) as unknown as CompletionPort;
    const gatedEffects = new Proxy(effectsState, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => gate.pass(async () => {
          const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (name === 'saveStep') {
            const at = args[0] as { offset: number };
            const id = `${at.offset}/${String(args[1])}`;
            saved.add(id);
            running.delete(id);
            gate.event();
          }
          return result;
        });
      },
    });
    const sink: HandOffSink = {
      write: (items) => gate.pass(async () => {
        for (const item of items) if (item.kind === 'retry') copies.push({ item, offset: copies.length });
        return items.map(() => ({ status: 'written' as const }));
      }),
      send: (sent) => gate.pass(async () => {
        outputs.push(...sent.flat());
        gate.event();
        return sent.map(() => undefined);
      }),
    };
    const handler = async (record: LanesRecord, ctx: LanesContext): Promise<void> => {
      const offset = record.origin.offset;
      const spec = history.records[offset]!;
      for (let s = 0; s < spec.steps; s += 1) {
        await ctx.step(`s${s}`, async () => {
          const id = `${offset}/s${s}`;
          if (gate.dead) return gate.hang<number>();
          if (saved.has(id)) completedStepRanAgain.push(id);
          effects.set(id, (effects.get(id) ?? 0) + 1);
          running.set(id, true);
          gate.event();
          if (gate.dead) return gate.hang<number>();
          return s;
        });
        if (spec.failAfter === s && ctx.attempt === 1) throw new Error('fails once after a step');
      }
      if (spec.failAfter !== undefined && spec.failAfter >= spec.steps && ctx.attempt === 1) throw new Error('fails once');
      for (let o = 0; o < spec.outputs; o += 1) ctx.send('out', { key: String(record.key), value: `${offset}.${o}` });
      succeeded.add(offset);
    };
    const engine = new Engine({ options, handler, store: port, telemetry: { logger, metrics }, effects: gatedEffects });
    return { engine, paths: pathParts(options, logger), sink, gate, running };
  };

  const retryRef = (topic: string): PartitionRef => ({ group: RIG_GROUP, topic, partition: 0 });
  const allDone = (): boolean => records.every((r) => store.partition(RIG_REF).model.isDone(r.offset))
    && copies.every((c) => store.partition(retryRef(c.item.topic)).model.isDone(c.offset));
  const abandoned: Array<{ gate: Gate; run: Promise<void> }> = [];
  for (let round = 0; round < 40 && !allDone(); round += 1) {
    const { engine, paths, sink, gate, running: inStep } = container(history.crashes[round]);
    const run = async (): Promise<void> => {
      const pending = copies.filter((c) => !store.partition(retryRef(c.item.topic)).model.isDone(c.offset));
      if (pending.length > 0) {
        const event = decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records: pending.map((c) => copyRecord(c.item, c.offset)) }));
        await engine.run(new RetryPath(paths), event.partitions, sink, within(60_000));
      }
      const event = decodeKafkaEventLazily(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
      await engine.run(new SourcePath(paths), event.partitions, sink, within(60_000));
    };
    const running = run();
    await Promise.race([running, gate.died]);
    if (gate.dead) abandoned.push({ gate, run: running });
    if (gate.dead) {
      crashed += 1;
      // Steps whose effect ran and whose result was not stored when the container died: cut off inside the step.
      for (const id of inStep.keys()) cutInside.set(id, (cutInside.get(id) ?? 0) + 1);
    }
  }
  const drained = allDone();
  const result = { effects: new Map(effects), cutInside: new Map(cutInside), outputs: [...outputs], crashed, doneBeforeOutputs, completedStepRanAgain };
  // The dead containers' invocations end now (every call they wait on fails), so none of their timers outlives the test.
  for (const { gate } of abandoned) gate.bury();
  await Promise.all(abandoned.map(({ run }) => run.catch(() => undefined)));
  if (!drained) throw new Error(`history did not drain: ${JSON.stringify(history)}`);
  return result;
}
