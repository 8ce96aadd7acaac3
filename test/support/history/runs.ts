/** Invocations of the processor and the retry function, and the handler the ghost watches at every start. */

import { Engine, type EngineTask, type RecordPath } from '../../../src/engine/engine';
import { pathParts, type Waiting } from '../../../src/engine/run-scope';
import type { LanesContext, LanesRecord, RecordHandler } from '../../../src/engine/types';
import { type KafkaBatchResponse, type KafkaRecordInput, decodeKafkaEventLazily, encodeKafkaEvent } from '../../../src/event';
import { readHandOffHeaders } from '../../../src/handoff/headers';
import type { HandOffItem } from '../../../src/ports/handoff';
import { retryTierOf } from '../../../src/options/names';
import { RetryPath } from '../../../src/retry/retry-path';
import { SourcePath } from '../../../src/source/source-path';
import { within } from '../engine-rig';
import { tpKey } from './backend';
import { Container, ContainerGone } from './container';
import { HistoryLosses } from './losses';
import { CUT_MS, LONG_MS, type LoggedCopy, type Run, SHORT_MS, STEP_START_MS, STOP_MS, aborted, errorOf, silent } from './runtime';
import type { FailureKind, Fault, RetryStep } from './spec';

/** How long a round of a durable retry function may leave a copy waiting, in the histories: copies due later go back to their tier then. */
const SUSPEND_HORIZON_MS = 60_000;

export class HistoryRuns extends HistoryLosses {
  /** Per tier partition whose execution a round left waiting (`suspend`): when its next round is due (epoch ms). */
  protected readonly wakes = new Map<string, number>();

  /** One invocation of the processor or the retry function, in a container of its own. */
  protected async invoke(
    kind: 'processor' | 'retry',
    batches: ReadonlyArray<{ key: string; start: number; end: number; records: KafkaRecordInput[] }>,
    fault: Fault,
    during?: RetryStep['during'],
    /** With copies not all due: how long the other ones have to start, beyond `SHORT_MS`'s 2 ms (default `STEP_START_MS`). */
    startWindowMs?: number,
  ): Promise<void> {
    const invocation = (this.invocations += 1);
    const container = new Container(fault);
    const records = batches.flatMap((b) => b.records);
    for (const r of records) this.delivered.add(tpKey(r.topic, r.partition));
    this.trace.push(`  #${invocation} ${kind} ${batches.map((b) => `${b.key}[${b.start},${b.end})`).join(' ')} fault ${JSON.stringify(fault)}`);
    // G7: what was done before the invocation must not run in it.
    const doneBefore = new Set<string>();
    for (const b of batches) {
      const first = b.records[0]!;
      const ref = { group: this.backend.group, topic: first.topic, partition: first.partition };
      for (const o of await this.backend.doneOffsets(ref, b.records.map((r) => r.offset))) doneBefore.add(tpKey(first.topic, first.partition) + `@${o}`);
    }
    let remainingMs = LONG_MS;
    if (fault.kind === 'cut') remainingMs = CUT_MS;
    else if (fault.kind === 'timeout' && fault.stop) remainingMs = STOP_MS;
    else if (kind === 'retry' && batches.some((b) => this.tierSlice(b).some((c) => c.item.dueAtMs > this.clock.now()))) remainingMs = SHORT_MS + (startWindowMs ?? STEP_START_MS);

    const taken = new Map<string, HandOffItem>();
    if (kind === 'retry') {
      for (const c of batches.flatMap((b) => this.tierSlice(b))) taken.set(`${c.record.topic}@${c.record.offset}`, c.item);
    }
    const engine = new Engine({
      options: this.options,
      handler: this.handler(kind, invocation, container, doneBefore, during),
      store: this.storeOf(container),
      telemetry: silent,
      clock: this.clock,
    });
    const paths = pathParts(this.options, silent.logger, () => this.clock.now());
    // Decoded as the function decodes an event: a record when its chunk is admitted.
    const decoded = decodeKafkaEventLazily(encodeKafkaEvent({ source: 'SelfManagedKafka', records }));
    const admission: RecordPath<EngineTask> = kind === 'processor' ? new SourcePath(paths) : new RetryPath(paths) as unknown as RecordPath<EngineTask>;
    let response: KafkaBatchResponse | undefined;
    let waiting: Waiting | undefined;
    let thrown: unknown;
    try {
      const sink = this.sinkOf(container, invocation, taken);
      if (kind === 'retry' && this.spec.suspend === true) {
        // A round of a durable execution: copies not due wait for the next round, up to a tier's worth of time.
        ({ response, waiting } = await engine.round(admission, decoded.partitions, sink, within(remainingMs), this.clock.now() + SUSPEND_HORIZON_MS));
      } else {
        response = await engine.run(admission, decoded.partitions, sink, within(remainingMs));
      }
    } catch (error) {
      thrown = error;
    }
    if (container.dead) {
      this.crashes += 1;
      this.trace.push(`  #${invocation} crashed: the trigger delivers the batch again`);
      return;
    }
    const failed = response?.batchItemFailures ?? [];
    // Only back-pressure may leave records unhandled without a crash: the trigger delivers them again (G5).
    if (thrown !== undefined || (failed.length > 0 && this.spec.caps === undefined)) {
      this.violate(`#${invocation} (${kind}, no crash) did not hand every record off: ${thrown === undefined ? JSON.stringify(response) : String(thrown)}`);
      return;
    }
    if (failed.length > 0) {
      this.refused += failed.length;
      this.trace.push(`  #${invocation} refused ${JSON.stringify(failed.map((f) => f.itemIdentifier))}`);
    }
    if (waiting !== undefined) {
      // The execution goes on: its batch stays uncommitted, and the tier's next delivery is that batch again.
      this.suspended += waiting.copies;
      this.trace.push(`  #${invocation} left ${waiting.copies} cop${waiting.copies === 1 ? 'y' : 'ies'} waiting, the next due at +${waiting.nextDueAtMs - this.clock.now()} ms`);
      for (const b of batches) {
        this.position.set(b.key, Math.min(b.start, this.position.get(b.key) ?? b.start));
        this.wakes.set(b.key, waiting.nextDueAtMs);
      }
      return;
    }
    for (const b of batches) this.wakes.delete(b.key);
    for (const b of batches) {
      const refused = failed.filter((f) => f.itemIdentifier.partition === b.key).map((f) => f.itemIdentifier.offset);
      this.position.set(b.key, refused.length > 0 ? Math.min(...refused) : b.end);
    }
  }

  protected tierSlice(b: { key: string; start: number; end: number }): LoggedCopy[] {
    const topic = b.key.slice(0, b.key.lastIndexOf('-'));
    return (this.tierLogs.get(topic) ?? []).slice(b.start, b.end);
  }

  /** The user's handler, as the ghost watches it: checks at every start, outcome as planned. */
  protected handler(kind: 'processor' | 'retry', invocation: number, container: Container, doneBefore: ReadonlySet<string>, during?: RetryStep['during']): RecordHandler {
    let starts = 0;
    return async (record, ctx) => {
      const { alive, hang } = container.start();
      if (!alive) throw new ContainerGone();
      starts += 1;
      if (during !== undefined && starts === during.start) {
        this.trace.push(`  (while #${invocation} starts ${record.origin.partition}:${record.origin.offset}: a committer run, a loss, a committer run)`);
        await this.commitAndCheck();
        await this.lose({ t: 'lose', what: during.what, back: 1, pick: 0, uncommitted: false }, -1);
        await this.commitAndCheck();
      }
      const via: Run['via'] = kind === 'processor' ? 'source' : retryTierOf(this.backend.group, record.topic) === undefined ? 'drained' : 'copy';
      const run: Run = {
        seq: (this.seq += 1),
        invocation,
        via,
        p: record.origin.partition,
        o: record.origin.offset,
        attempt: ctx.attempt,
        copy: via === 'copy' ? `${record.topic}@${record.offset}` : undefined,
        at: this.paced(),
        commits: this.commits,
        outcome: 'running',
      };
      this.checkStart(run, record, doneBefore);
      this.runs.push(run);
      this.trace.push(`  #${invocation} run ${run.p}:${run.o} (${String(this.keyOf(run.p, run.o))}) attempt ${run.attempt} via ${via}${run.copy === undefined ? '' : ` ${run.copy}`}`);
      return this.execute(run, ctx, container, hang);
    };
  }

  protected checkStart(run: Run, record: LanesRecord, doneBefore: ReadonlySet<string>): void {
    const { p, o, attempt } = run;
    const rk = `${p}:${o}`;
    const what = `${rk} (key ${String(this.keyOf(p, o))}) attempt ${attempt} via ${run.via}${run.copy === undefined ? '' : ` ${run.copy}`}`;
    if (record.origin.topic !== this.backend.source || o >= (this.spec.keys[p]?.length ?? 0)) this.violate(`ran a record of unknown origin ${JSON.stringify(record.origin)}`);
    // G4: attempts per record never exceed maxAttempts.
    if (attempt < 1 || attempt > this.spec.maxAttempts) this.violate(`${what}: attempt outside 1..${this.spec.maxAttempts}`);
    // G7: a record whose done bit is set is never run again when it is redelivered.
    if (run.via === 'source' && doneBefore.has(`${tpKey(record.topic, record.partition)}@${record.offset}`)) {
      this.violate(`${what}: ran although its done bit was set when the batch was delivered (G7)`);
    }
    if (run.via === 'copy' && doneBefore.has(`${tpKey(record.topic, record.partition)}@${record.offset}`)) {
      this.violate(`${what}: a copy ran again although its own done bit was set when it was redelivered (G7)`);
    }
    // G4: a retry never runs before its due time.
    if (run.via === 'copy') {
      const due = readHandOffHeaders(record.headers).dueAtMs;
      if (due === undefined || this.clock.now() < due) this.violate(`${what}: ran ${due === undefined ? 'without a due time' : `${due - this.clock.now()} ms before its due time`} (G4)`);
    }
    const lane = this.laneOf(p, o);
    // While its partition's lost state stands undetected, a record may run out of lane order, and an older attempt
    // may run again (at-least-once); the loss must be found by the end, or those breaks count (see `lose`).
    const blind = this.undetected.has(p);
    const order = (message: string): void => {
      if (!blind) {
        this.violate(message);
        return;
      }
      this.blind.push({ p, message });
      this.blindRuns += 1;
      this.trace.push(`  (blind: ${message})`);
    };
    if (this.laneMode && lane !== undefined) {
      // Key / partition mode: a record starts only after every earlier record of its lane is terminal.
      for (let m = 0; m < o; m += 1) {
        if (this.laneOf(p, m) === lane && !this.laneTerminal(`${p}:${m}`)) {
          order(`${what}: started while ${p}:${m} of its lane ${lane} is neither done nor dead-lettered${this.spec.deadLetter === 'hold' ? ' and released' : ''}`);
        }
      }
      // One record per lane in flight.
      const running = [...(this.inFlight.get(lane) ?? [])];
      if (running.length > 0) {
        order(`${what}: started while ${running.map((r) => `${r.p}:${r.o} attempt ${r.attempt} via ${r.via}${r.copy === undefined ? '' : ` ${r.copy}`} (#${r.invocation})`).join(', ')} of lane ${lane} is running`);
      }
      // A stale copy (an older attempt, or a head its lane was released past) never runs.
      if (!blind && this.released.has(rk)) this.violate(`${what}: ran after its lane was released past it (stale)`);
      const max = this.maxAttempt.get(rk) ?? 0;
      if (!blind && attempt < max) this.violate(`${what}: ran after attempt ${max} of it had started (stale)`);
    }
    this.maxAttempt.set(rk, Math.max(attempt, this.maxAttempt.get(rk) ?? 0));
  }

  protected async execute(run: Run, ctx: LanesContext, container: Container, hang: boolean): Promise<void> {
    const rk = `${run.p}:${run.o}`;
    const lane = this.laneMode ? this.laneOf(run.p, run.o) : undefined;
    if (lane !== undefined) {
      const running = this.inFlight.get(lane) ?? new Set<Run>();
      running.add(run);
      this.inFlight.set(lane, running);
    }
    // At its record deadline the engine counts a run as failed and moves on, the handler going on detached
    // (at-least-once allows it): from then on the ghost counts it as a run that hung, out of its lane. A loaded
    // machine may take the whole deadline (10 ms) for a turn of the event loop, so any run may end this way.
    const timedOut = (): void => {
      if (run.outcome === 'running' || run.outcome === 'hang') run.outcome = 'hang';
      if (lane !== undefined) this.inFlight.get(lane)?.delete(run);
    };
    ctx.signal.addEventListener('abort', timedOut, { once: true });
    try {
      if (hang) {
        run.outcome = 'hang';
        await aborted(ctx.signal);
      }
      // A turn of the event loop, as a handler's I/O takes: the other records of the invocation, and the other
      // invocations of the step, go on meanwhile (runs overlap, so one record per lane in flight is checked).
      await new Promise<void>((resolve) => (this.handlerMs === undefined ? setImmediate(resolve) : setTimeout(resolve, this.handlerMs)));
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const key = this.keyOf(run.p, run.o);
      const failure: FailureKind | undefined = key !== null && key === this.spec.poison ? 'transient' : this.failurePlan.get(`${rk}:${run.attempt}`);
      if (failure !== undefined) {
        run.outcome = failure;
        throw errorOf(failure);
      }
      if (container.dead) {
        run.outcome = 'killed';
        throw new ContainerGone();
      }
      run.outcome = 'ok';
      this.successes.set(rk, (this.successes.get(rk) ?? 0) + 1);
      this.terminalLog.push({ rk, seq: run.seq, at: this.paced(), commits: this.commits });
      if (!this.firstSuccess.has(rk)) this.firstSuccess.set(rk, run.seq);
    } finally {
      ctx.signal.removeEventListener('abort', timedOut);
      if (lane !== undefined) this.inFlight.get(lane)?.delete(run);
    }
  }

  // ---- commits and checks ----
}
