import { RecordTimeoutError } from '../errors';
import { readRecordParts, type RecordParts } from '../options/deserialize';
import { SchemaRegistryUnavailableError } from '../registry/errors';
import type { Clock } from '../ports';
import type { OutputMessage } from '../ports/handoff';
import type { DoneBits } from './done-bits';
import { isRepeatedOutput, type OutputBatches } from './outputs';
import { RecordContext, isPromiseLike, recordView } from './record-context';
import { RecordDeadlines, type RecordDeadline } from './record-deadlines';
import type { RunReport } from './run-report';
import type { EngineTask, InvocationScope, RecordPath } from './run-scope';
import type { LaneScheduler } from './scheduler';
import type { RecordEffects } from './steps';
import type { RecordHandler } from './types';

/** What an invocation's record runs work with: its path and scope, its scheduler, done bits, outputs and figures. */
export interface RecordRunParts<T extends EngineTask> {
  readonly handler: RecordHandler;
  readonly path: RecordPath<T>;
  readonly scope: InvocationScope<T>;
  readonly scheduler: LaneScheduler<T>;
  readonly doneBits: DoneBits;
  readonly outputs: OutputBatches;
  readonly report: RunReport;
  readonly clock: Clock;
  /** A slot or a lane may have come free: the invocation starts what is ready. */
  readonly fill: () => void;
}

/** How a record's handler ended: `undefined` when its deadline came first (the deadline settles the record then). */
interface HandlerEnd {
  readonly failed: boolean;
  readonly failure: unknown;
  readonly effects: RecordEffects | undefined;
}

const noop = (): void => undefined;

/**
 * The runs of an invocation's records: each from its path's preparation through its handler, within its deadline, to
 * its success or failure, its slot and lane then handed on. This is the run path of every record.
 */
export class RecordRuns<T extends EngineTask> {
  readonly deadlines: RecordDeadlines;
  readonly #parts: RecordRunParts<T>;
  readonly #scope: InvocationScope<T>;
  readonly #path: RecordPath<T>;
  readonly #timeoutMs: number;
  /** Records started and not settled. */
  #running = 0;

  constructor(parts: RecordRunParts<T>) {
    this.#parts = parts;
    this.#scope = parts.scope;
    this.#path = parts.path;
    const timeoutMs = parts.scope.options.recordTimeoutMs;
    this.#timeoutMs = timeoutMs;
    this.deadlines = new RecordDeadlines(
      timeoutMs,
      () => new RecordTimeoutError(`record timed out after ${timeoutMs} ms`),
      (deadline) => this.#expired(deadline),
    );
  }

  /** Records started and not settled. */
  get running(): number {
    return this.#running;
  }

  /** Starts a task the scheduler gave a slot. */
  start(task: T): void {
    this.#running += 1;
    if (this.#path.prepare !== undefined || this.#scope.options.dedupeOutputs) void this.#prepare(task);
    else this.#begin(task);
  }

  /**
   * The path's preparation and the output dedupe, before the handler (`#begin`) takes the record over. A fault of ours
   * (not the handler's: those are caught around it) is settled here too.
   */
  async #prepare(task: T): Promise<void> {
    const scope = this.#scope;
    let begun = false;
    try {
      if (this.#path.prepare !== undefined && !(await this.#path.prepare(scope, task))) return;
      if (scope.options.dedupeOutputs && (await isRepeatedOutput(scope, task))) {
        scope.count('duplicates');
        const succeeded = this.#path.succeeded(scope, task);
        if (succeeded !== undefined) await succeeded;
        return;
      }
      begun = true;
      this.#begin(task);
    } catch (error) {
      await this.#faulted(task, error);
    } finally {
      if (!begun) this.#settled(task, false);
    }
  }

  /**
   * Runs the handler within the record's deadline, synchronously up to its call: no promise of ours per record, its
   * own is followed with `then` (`#handled`, `#handlerFailed`), and a success without steps or outputs settles there
   * and then. A handler still running when its deadline comes is settled by the deadline (`#expired`), and its late
   * outcome is then ignored.
   */
  #begin(task: T): void {
    const scope = this.#scope;
    const deadline = this.deadlines.start(task);
    let ctx: RecordContext | undefined;
    let parts: ReturnType<typeof readRecordParts>;
    try {
      if (task.preset !== undefined) throw task.preset;
      ctx = new RecordContext(task, scope, Math.min(this.#parts.clock.now() + this.#timeoutMs, scope.abortRunningAt), deadline);
      parts = readRecordParts(scope.options, task.record);
    } catch (error) {
      this.#handlerFailed(task, deadline, ctx, error);
      return;
    }
    const context = ctx;
    // A promise only when a schema validates asynchronously; bounded by the record's deadline like the handler.
    if (parts instanceof Promise) {
      deadline.race(parts).then(
        (read) => this.#call(task, deadline, context, read),
        (error: unknown) => this.#handlerFailed(task, deadline, context, error),
      );
    } else {
      this.#call(task, deadline, context, parts);
    }
  }

  #call(task: T, deadline: RecordDeadline, ctx: RecordContext, parts: RecordParts): void {
    let run: unknown;
    try {
      run = this.#parts.handler(recordView(task, parts), ctx);
      if (deadline.expired) {
        // Past its deadline already (the invocation's hard stop): the record fails, whatever the handler does.
        if (isPromiseLike(run)) run.then(undefined, noop);
        throw deadline.reason;
      }
    } catch (error) {
      this.#handlerFailed(task, deadline, ctx, error);
      return;
    }
    if (!isPromiseLike(run)) {
      this.#handled(task, deadline, ctx);
      return;
    }
    // Followed alone (no promise racing it). A handler that ignores its signal cannot hold the invocation: its
    // deadline's expiry fails the record (`#expired`), the handler goes on detached (at-least-once allows it).
    deadline.handOver();
    run.then(
      () => this.#handled(task, deadline, ctx),
      (error: unknown) => this.#handlerFailed(task, deadline, ctx, error),
    );
  }

  /** The handler succeeded: the record is done, at once unless there are outputs to send or a path's success to wait for. */
  #handled(task: T, deadline: RecordDeadline, ctx: RecordContext): void {
    if (deadline.expired) return;
    this.#finish(deadline);
    const effects = ctx.effects;
    if (effects !== undefined) {
      if (effects.usedSteps || !effects.sealsAtOnce) {
        void this.#concludeGuarded(task, { failed: false, failure: undefined, effects });
        return;
      }
      const outputs = effects.seal() as readonly OutputMessage[];
      if (outputs.length > 0) {
        this.#sendOutputs(task, outputs, effects);
        return;
      }
    }
    let succeeded: Promise<void> | void;
    try {
      succeeded = this.#path.succeeded(this.#scope, task);
    } catch (error) {
      void this.#afterFault(task, error);
      return;
    }
    if (succeeded === undefined) this.#settled(task, false);
    else void this.#concludeGuarded(task, undefined, succeeded);
  }

  /**
   * A handler's outputs, sealed at once and without steps, sent with no async function of ours (as a success without
   * outputs settles): its slot runs another lane's record meanwhile, and the record is done once they are acknowledged.
   */
  #sendOutputs(task: T, outputs: readonly OutputMessage[], effects: RecordEffects): void {
    this.#parts.scheduler.release();
    this.#parts.fill();
    this.#parts.outputs.send(outputs).then(
      () => {
        let succeeded: Promise<void> | void;
        try {
          succeeded = this.#path.succeeded(this.#scope, task);
        } catch (error) {
          void this.#afterFault(task, error, true);
          return;
        }
        if (succeeded === undefined) this.#settled(task, true);
        else void this.#concludeGuarded(task, undefined, succeeded, true);
      },
      // Outputs are acknowledged before the record is done (G3 extended); a send that fails fails the record.
      (error: unknown) => void this.#concludeGuarded(task, { failed: true, failure: error, effects }, undefined, true),
    );
  }

  /** The handler (or reading the record for it) failed: the path's failure, unless the deadline settled the record. */
  #handlerFailed(task: T, deadline: RecordDeadline, ctx: RecordContext | undefined, error: unknown): void {
    if (deadline.expired && deadline.handedOver) return;
    this.#finish(deadline);
    // Not an attempt: back to the event source (`#faulted`).
    if (error instanceof SchemaRegistryUnavailableError) void this.#afterFault(task, error);
    else void this.#concludeGuarded(task, { failed: true, failure: error, effects: ctx?.effects });
  }

  #finish(deadline: RecordDeadline): void {
    deadline.finish();
    this.#parts.report.latencies.push(performance.now() - deadline.startedAt);
  }

  /** The rest of a record's run after its handler (`end`, or a path's success `succeeding`), then its slot and lane go on. */
  async #concludeGuarded(task: T, end: HandlerEnd | undefined, succeeding?: Promise<void>, released = false): Promise<void> {
    const state = { released };
    try {
      if (end === undefined) await succeeding;
      else await this.#conclude(task, end, state);
    } catch (error) {
      await this.#faulted(task, error);
    } finally {
      this.#settled(task, state.released);
    }
  }

  /** A fault of ours settling a record after its handler ran. */
  async #afterFault(task: T, error: unknown, released = false): Promise<void> {
    try {
      await this.#faulted(task, error);
    } finally {
      this.#settled(task, released);
    }
  }

  /** After the handler: its outputs are sent (its slot released meanwhile), then the path settles success or failure. */
  async #conclude(task: T, end: HandlerEnd, state: { released: boolean }): Promise<void> {
    const scope = this.#scope;
    let { failed, failure } = end;
    const effects = end.effects;
    if (!failed && effects !== undefined) {
      try {
        const outputs = await effects.seal();
        if (outputs.length > 0) {
          // The handler is over: while the broker acknowledges its outputs, its slot runs another lane's record
          // (its own lane waits until it is done).
          state.released = true;
          this.#parts.scheduler.release();
          this.#parts.fill();
          // Outputs are acknowledged before the record is done (G3 extended); a send that fails fails the record.
          await this.#parts.outputs.send(outputs);
        }
      } catch (error) {
        failed = true;
        failure = error;
      }
    }
    if (failed) {
      await this.#path.failed(scope, task, failure);
    } else {
      const succeeded = this.#path.succeeded(scope, task);
      if (succeeded !== undefined) await succeeded;
      if (effects?.usedSteps === true) this.#parts.doneBits.forget(effects.stored);
    }
  }

  /** A handler was still running when its record's deadline came: the record fails with the deadline's reason. */
  #expired(deadline: RecordDeadline): void {
    this.#parts.report.latencies.push(performance.now() - deadline.startedAt);
    void this.#failExpired(deadline.subject as T, deadline.reason);
  }

  async #failExpired(task: T, reason: unknown): Promise<void> {
    try {
      await this.#path.failed(this.#scope, task, reason);
    } catch (error) {
      await this.#faulted(task, error);
    } finally {
      this.#settled(task, false);
    }
  }

  /** A fault of ours while settling a task: the path's, or the record and those waiting behind it go back to the event source. */
  async #faulted(task: T, error: unknown): Promise<void> {
    if (this.#path.faulted !== undefined) {
      this.#path.faulted(this.#scope, task, error);
      return;
    }
    await this.#scope.admitted(task.partitionKey);
    const waiting = task.lane === undefined ? [] : this.#parts.scheduler.drainLane(task.partitionKey, task.lane);
    this.#scope.redeliver(task.ref, [task.offset, ...waiting.map((w) => w.offset)], error);
  }

  /** A started task is over: its slot (unless `released` already) and its lane go to the next. */
  #settled(task: T, released: boolean): void {
    this.#running -= 1;
    this.#parts.scheduler.finish(task, released);
    this.#parts.fill();
  }
}
