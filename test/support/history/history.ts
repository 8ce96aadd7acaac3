/**
 * Randomized histories of one group: source records delivered (and redelivered) as the Lambda Kafka trigger
 * does, handlers that fail as a generated plan says, retry copies delivered late, early, twice or out of
 * order across tiers, invocations cut short or thrown away mid-way, committer runs and re-drives. A ghost
 * kept beside the engine (what every handler run saw, what the broker acknowledged) checks the guarantees of
 * docs/ARCHITECTURE.md, "Guarantees", while the history runs and once everything is drained.
 *
 * The runner is written against `HistoryBackend`: the in-memory completion model for unit tests (thousands of
 * histories), the real Redis store for integration tests (the real Lua scripts). A failing history throws
 * `HistoryViolation` with what broke and the history's trace; `HISTORY_TRACE=1` prints the trace of passing ones.
 *
 * Time: the engine runs on a clock the history moves (retry delays of 5 s and 60 s, leases of 90 s pass in an
 * instant); timers stay real and short (a record deadline of 10 ms, a wait of 2 ms before a copy not yet due goes
 * back to its tier).
 */

import { type HistoryBackend, tpKey } from './backend';
import { HistoryDrain } from './drain';
import { HistoryViolation, expectedReason } from './runtime';
import type { DeliverStep, HistorySpec, RetryStep, Step } from './spec';
import type { HistoryStats, RunOptions } from './stats';

export class History extends HistoryDrain {
  async run(): Promise<void> {
    const snapshots = this.spec.steps.some((step) => step.t === 'lose' && step.what === 'writes');
    for (const [i, step] of this.spec.steps.entries()) {
      this.trace.push(`step ${i}: ${JSON.stringify(step)}`);
      if (snapshots && this.backend.losses !== undefined) {
        this.snapshots.set(i, await this.backend.losses.snapshot());
        this.releasedAt.set(i, new Set(this.released));
        this.snapshots.delete(i - 4);
        this.releasedAt.delete(i - 4);
      }
      await this.step(step, i);
      const next = this.spec.steps[i + 1];
      if (next?.t === 'lose' && next.uncommitted) this.trace.push('  (no committer run before the loss)');
      else if ('quiet' in step && step.quiet === true) this.trace.push('  (no committer run after this step)');
      else await this.commitAndCheck();
      this.throwIfViolated(`after step ${i}`);
    }
    this.trace.push('drain');
    await this.drain();
    this.throwIfViolated('while draining');
    await this.finalChecks();
    this.timeRecoveries();
    if (process.env.HISTORY_TRACE === '1') console.log(this.trace.join('\n'));
    this.throwIfViolated('at the end');
  }

  protected throwIfViolated(when: string): void {
    if (this.violations.length === 0) return;
    const trace = this.trace.length > 150 && process.env.HISTORY_FULL !== "1" ? ['…', ...this.trace.slice(-150)] : this.trace;
    throw new HistoryViolation(`${when}:\n  ${this.violations.join('\n  ')}\ntrace:\n  ${trace.join('\n  ')}`);
  }

  protected async step(step: Step, index: number): Promise<void> {
    switch (step.t) {
      case 'lose':
        return this.lose(step, index);
      case 'deliver':
        return this.deliver(step);
      case 'retry':
        await this.advance(step.advanceMs, 'retry');
        return this.retry(step);
      case 'both':
        await this.advance(step.retry.advanceMs, 'retry');
        await Promise.all([this.deliver(step.deliver), this.retry(step.retry)]);
        return;
      case 'commit':
        await this.advance(step.advanceMs, 'commit');
        return this.redrive(step.crashAfter === undefined ? undefined : { kind: 'crash', after: step.crashAfter });
      case 'rewind':
        if (step.what === 'source') {
          this.sourceLogs.forEach((_, p) => this.position.set(tpKey(this.backend.source, p), this.committed.get(tpKey(this.backend.source, p)) ?? 0));
        } else {
          for (const topic of this.tierTopics) this.position.set(tpKey(topic, 0), this.committed.get(tpKey(topic, 0)) ?? 0);
        }
        this.trace.push(`  positions ${JSON.stringify([...this.position])}`);
        return;
      case 'operator':
        return this.releaseHeld();
    }
  }

  protected async deliver(step: DeliverStep): Promise<void> {
    const partitions = step.partition === 'all' ? this.sourceLogs.map((_, p) => p) : [step.partition];
    const batches = partitions.flatMap((p) => {
      const log = this.sourceLogs[p] ?? [];
      const key = tpKey(this.backend.source, p);
      const start = Math.max(0, (this.position.get(key) ?? 0) - step.back);
      const end = Math.min(log.length, start + step.size);
      return start < end ? [{ key, start, end, records: log.slice(start, end) }] : [];
    });
    if (batches.length === 0) return;
    await this.invoke('processor', batches, step.fault);
  }

  protected async retry(step: RetryStep): Promise<void> {
    const topics = step.order === 'desc' ? [...this.tierTopics].reverse() : this.tierTopics;
    const batches = topics.flatMap((topic) => {
      const log = this.tierLogs.get(topic) ?? [];
      const key = tpKey(topic, 0);
      const start = Math.max(0, (this.position.get(key) ?? 0) - step.back);
      const end = Math.min(log.length, start + step.size);
      return start < end ? [{ key, start, end, records: log.slice(start, end).map((c) => c.record) }] : [];
    });
    // One invocation per tier (one trigger each); the fault hits the first.
    const one = (batch: (typeof batches)[number], i: number): Promise<void> => this.invoke('retry', [batch], i === 0 ? step.fault : { kind: 'none' }, i === 0 ? step.during : undefined);
    if (step.order === 'parallel') {
      await Promise.all(batches.map(one));
      return;
    }
    for (const [i, batch] of batches.entries()) await one(batch, i);
  }

  protected async finalChecks(): Promise<void> {
    const { maxAttempts } = this.spec;
    for (const [p, log] of this.sourceLogs.entries()) {
      for (let o = 0; o < log.length; o += 1) {
        const rk = `${p}:${o}`;
        // G1: nothing lost.
        if (!this.terminal(rk)) this.violate(`${rk} was lost: never completed nor dead-lettered (G1)`);
        const bad = this.spec.badValues.some((b) => b.p === p && b.o === o);
        if (bad && (this.runs.some((r) => r.p === p && r.o === o) || (this.successes.get(rk) ?? 0) > 0)) this.violate(`${rk} has a value that is not JSON, yet a handler ran it`);
        for (const dl of this.deadLetters.get(rk) ?? []) {
          if (bad) {
            if (dl.reason !== 'deserialization') this.violate(`${rk} has a value that is not JSON, yet was dead-lettered with reason ${dl.reason}`);
            continue;
          }
          const cause = this.runs.find((r) => r.p === p && r.o === o && r.attempt === dl.attempt && expectedReason(r.outcome, r.attempt, maxAttempts) === dl.reason);
          if (cause === undefined) {
            const seen = this.runs.filter((r) => r.p === p && r.o === o).map((r) => `${r.attempt}:${r.outcome}`);
            this.violate(`${rk} dead-lettered at attempt ${dl.attempt} with reason ${dl.reason}, which no run of it explains (runs ${seen.join(', ')})`);
          }
        }
      }
    }
    // A loss never found, while runs broke lane order meanwhile: order broken for good.
    // After a first-minute loss a lane may run ahead blind and then heal without any loss being found (a redelivery
    // made its state again and the lost head's copy found itself its head again): a known limit, every record terminal.
    for (const { p, message } of this.blind) {
      if (!this.unmarkedLoss.has(tpKey(this.backend.source, p))) this.violate(`Redis lost state, no committer run found it, and meanwhile ${message}`);
    }
    if (this.laneMode) {
      // Per lane, first completions in offset order; on a recovered partition, from its durable frontier on, the
      // first completions after the recovery (earlier ones ran before the loss was found: they may repeat).
      const firstAfter = new Map<string, number>();
      for (const r of this.runs) {
        const cut = this.recovered.get(r.p);
        if (cut === undefined || r.o < cut.from || r.seq <= cut.seq || r.outcome !== 'ok') continue;
        if (!firstAfter.has(`${r.p}:${r.o}`)) firstAfter.set(`${r.p}:${r.o}`, r.seq);
      }
      const completion = (p: number, o: number): number | undefined => {
        const cut = this.recovered.get(p);
        return cut !== undefined && o >= cut.from ? firstAfter.get(`${p}:${o}`) : this.firstSuccess.get(`${p}:${o}`);
      };
      for (const [p, log] of this.sourceLogs.entries()) {
        const cut = this.recovered.get(p);
        for (let o = 0; o < log.length; o += 1) {
          const lane = this.laneOf(p, o);
          const at = completion(p, o);
          if (lane === undefined || at === undefined || (cut !== undefined && o < cut.from)) continue;
          for (let m = 0; m < o; m += 1) {
            const before = completion(p, m);
            if (this.laneOf(p, m) === lane && before !== undefined && before > at) this.violate(`${p}:${o} completed before ${p}:${m} of its lane ${lane}${cut === undefined ? '' : ' (after the recovery)'}`);
          }
        }
      }
    }
    // Without a crash (or a loss) every run is unique: done bits are flushed before an invocation returns, so nothing
    // runs twice (but a copy the broker stored twice runs twice when its record has no lane: no head to check).
    if (this.crashes === 0 && this.losses === 0) {
      const seen = new Map<string, number>();
      const dups = this.spec.dupWrites.length > 0;
      for (const r of this.runs) {
        if (dups && this.laneOf(r.p, r.o) === undefined) continue;
        const id = `${r.p}:${r.o}:${r.attempt}`;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        if (seen.get(id) === 2) this.violate(`no crash, yet ${r.p}:${r.o} attempt ${r.attempt} ran twice`);
      }
      for (const [rk, list] of this.deadLetters) {
        const [p, o] = rk.split(':').map(Number);
        if (dups && this.laneOf(p!, o!) === undefined) continue;
        if (list.length > 1 || (list.length === 1 && (this.successes.get(rk) ?? 0) > 0)) {
          this.violate(`no crash, yet ${rk} was dead-lettered ${list.length} time(s) and completed ${this.successes.get(rk) ?? 0} time(s)`);
        }
      }
    }
  }
}

/**
 * Runs one history on a backend and checks it; throws `HistoryViolation` on the first step that breaks a
 * guarantee, or at the end.
 *
 * @example
 * await fc.assert(fc.asyncProperty(historyArb(shape), async (spec) => {
 *   await runHistory(spec, new ModelBackend(spec.caps));
 * }), { numRuns: 500, seed: 1 });
 */
export async function runHistory(spec: HistorySpec, backend: HistoryBackend, run: RunOptions = {}): Promise<HistoryStats> {
  const history = new History(spec, backend, run);
  await history.run();
  return history.stats();
}
