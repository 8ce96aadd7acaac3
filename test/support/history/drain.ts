/** The drain after the steps, the paced clock, and the recovery times. */

import { tpKey } from './backend';
import { HistoryRuns } from './runs';
import type { HandOffItem } from '../../../src/ports/handoff';
import { COMMITTER_PERIOD_MS, DRAIN_ROUNDS, DRAIN_START_MS, IDLE_TICK_MS, STEP_START_MS, copyId } from './runtime';

export class HistoryDrain extends HistoryRuns {
  protected async settled(): Promise<boolean> {
    const caughtUp = (key: string, end: number): boolean => (this.committed.get(key) ?? 0) === end || (this.unmarkedLoss.has(key) && this.position.get(key) === end);
    for (const [p, log] of this.sourceLogs.entries()) {
      const key = tpKey(this.backend.source, p);
      if (!caughtUp(key, log.length) || (this.unmarkedLoss.has(key) && log.some((_, o) => !this.terminal(`${p}:${o}`)))) return false;
      // Every record terminal after a first-minute loss, yet a lane may stay blocked: an older snapshot restored on
      // a partition the tracked set no longer names (lost with the rest, and re-added only by an admit a minute
      // later) keeps a head whose run succeeded. Nothing is lost; the next record of that lane re-tracks the partition
      // and the committer's overdue-head check recovers it (docs/durability.md, "Recovery, without an operator").
      if (this.unmarkedLoss.has(key)) continue;
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      if ((await this.backend.blockedLanes(ref)) > 0 || (await this.backend.parkedOffsets(ref, this.storeLanes(p))).size > 0) return false;
    }
    return this.tierTopics.every((topic) => caughtUp(tpKey(topic, 0), this.tierLogs.get(topic)?.length ?? 0));
  }

  /**
   * Deliver what each trigger has not delivered yet, source and tiers, until nothing is left. A trigger goes on
   * from its own position (the event source never goes back by itself): a record Redis lost after its delivery
   * comes back only through a recovery.
   */
  protected async drain(): Promise<void> {
    // As deployed, the retry trigger hands the function what its tiers hold as it is written, due or not, before the
    // clock moves on: a copy whose lane was lost reports it now, not once due; a committer run follows, as after a step.
    await this.deliverTiers(STEP_START_MS);
    await this.commitAndCheck();
    // A shorter committer period takes more rounds for the same backoffs and leases.
    const rounds = DRAIN_ROUNDS * Math.max(1, Math.ceil(COMMITTER_PERIOD_MS / this.committerPeriodMs));
    for (let round = 0; round < rounds; round += 1) {
      this.skew += await this.drainTick();
      await this.releaseHeld();
      await this.redrive(undefined);
      await this.commitAndCheck();
      if (await this.settled()) return;
      const source = this.sourceLogs.flatMap((log, p) => {
        const key = tpKey(this.backend.source, p);
        const start = this.position.get(key) ?? 0;
        return start < log.length ? [{ key, start, end: log.length, records: log.slice(start) }] : [];
      });
      if (source.length > 0) await this.invoke('processor', source, { kind: 'none' });
      await this.commitAndCheck();
      await this.deliverTiers(DRAIN_START_MS);
      if (this.violations.length > 0) return;
    }
    const open = this.sourceLogs.flatMap((log, p) => log.map((_, o) => `${p}:${o}`)).filter((rk) => !this.terminal(rk));
    this.violate(`never settles: after ${rounds} rounds committed is ${JSON.stringify([...this.committed])}, logs ${JSON.stringify([...this.tierLogs].map(([t, l]) => [t, l.length]))}; neither completed nor dead-lettered: ${open.join(', ') || 'none'}`);
  }

  /**
   * The retry trigger delivers what each tier holds past its position. The retry function runs the copies due at once
   * and would wait for the others, which the rig's clock does between rounds instead: they go back to their tier
   * unchanged, after the others had `startMs` to start.
   */
  protected async deliverTiers(startMs: number): Promise<void> {
    for (const topic of this.tierTopics) {
      const log = this.tierLogs.get(topic) ?? [];
      const key = tpKey(topic, 0);
      const start = this.position.get(key) ?? 0;
      this.handedUpTo.set(topic, log.length);
      if (start < log.length) await this.invoke('retry', [{ key, start, end: log.length, records: log.slice(start).map((c) => c.record) }], { kind: 'none' }, undefined, startMs);
    }
  }

  protected async advance(ms: number, what: 'retry' | 'commit'): Promise<void> {
    const now = this.clock.now();
    let needed: number;
    if (what === 'retry') {
      const dues = this.tierTopics.flatMap((topic) => (this.tierLogs.get(topic) ?? []).slice(this.position.get(tpKey(topic, 0)) ?? 0).map((c) => c.item.dueAtMs - now));
      needed = dues.length === 0 ? 0 : Math.max(0, Math.min(...dues));
    } else {
      const leases: number[] = [];
      for (const p of this.sourceLogs.keys()) {
        for (const head of await this.backend.store.laneHeads({ group: this.backend.group, topic: this.backend.source, partition: p })) {
          if (head.leaseUntilMs > now) leases.push(head.leaseUntilMs - now);
        }
      }
      needed = leases.length === 0 ? 0 : Math.ceil(Math.min(...leases) / this.committerPeriodMs) * this.committerPeriodMs;
    }
    this.skew += ms;
    this.unpaced += ms - Math.min(ms, needed);
  }

  /**
   * How far a drain round moves the clock: not at all (1 ms) while a copy in a tier (past its trigger's position) is
   * due and may run; else until the next copy is due or lease of a lane head expires, at most a committer period;
   * `IDLE_TICK_MS` with none of these.
   */
  protected async drainTick(): Promise<number> {
    const now = this.clock.now();
    const waits: number[] = [];
    // A due copy the function has not been handed yet may run at once: one refused last round (the window cap; the
    // trigger hands it over again at once) or one written since (a recovery's, a release's). Only a due copy written
    // back unchanged after the function was handed it waits for something else (`ran` below).
    let fresh = false;
    for (const topic of this.tierTopics) {
      // A durable execution waiting on the tier's batch runs its next round at its wake time, whatever its copies.
      const wake = this.wakes.get(tpKey(topic, 0));
      if (wake !== undefined) {
        waits.push(wake - now);
        continue;
      }
      const log = this.tierLogs.get(topic) ?? [];
      const position = this.position.get(tpKey(topic, 0)) ?? 0;
      const handed = new Set(log.slice(0, position).map((c) => handedKey(c.item)));
      for (const [i, c] of log.slice(position).entries()) {
        waits.push(c.item.dueAtMs - now);
        if (c.item.dueAtMs <= now && (position + i < (this.handedUpTo.get(topic) ?? 0) || !handed.has(handedKey(c.item)))) fresh = true;
      }
    }
    // Records not delivered yet are delivered every round (a refused one waits for its lane: no reason to move).
    for (const p of this.sourceLogs.keys()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      // An expired lease is the round's re-drive to take: nothing to wait for.
      for (const head of await this.backend.store.laneHeads(ref)) if (head.leaseUntilMs > now) waits.push(head.leaseUntilMs - now);
    }
    if (waits.length === 0) return IDLE_TICK_MS;
    const ran = this.runs.length !== this.runsAtTick;
    this.runsAtTick = this.runs.length;
    // Copies due, all handed to the function before and written back unchanged in a round that ran nothing, wait
    // behind a copy of their lane not due yet (a lane's copies run in order): as deployed, the function holds them
    // until that one is due, so the clock moves on to it. Moved by 1 ms a round instead, such a lane never came due
    // within the drain's rounds (and fast-check shrank it for an hour). A fresh due copy does not wait: a round that
    // only dead-lettered or released, or whose copies the window cap refused, moved the clock 5 s (the next copy
    // due) before the copies behind ran, and the recovery times counted that wait, which no deployment has.
    const ahead = waits.filter((wait) => wait > 0);
    if (waits.some((wait) => wait <= 0) && (ran || fresh || ahead.length === 0)) return 1;
    return Math.min(this.committerPeriodMs, Math.min(...ahead) + 1);
  }

  /** Handler runs at the last drain tick: a round that ran none moves the clock past copies due (`drainTick`). */
  protected runsAtTick = -1;

  /** Per tier, the end of the copies last handed to the retry function: one below it past the position was refused. */
  protected readonly handedUpTo = new Map<string, number>();

  /** Each recovery whose records all became terminal again before the next one of its partition (`RecoveryTime`). */
  protected timeRecoveries(): void {
    if (this.recoveryTimes === undefined) return;
    for (const [i, r] of this.recoveryLog.entries()) {
      const next = this.recoveryLog.slice(i + 1).find((later) => later.p === r.p);
      const within = (e: { seq: number }): boolean => e.seq > r.seq && (next === undefined || e.seq <= next.seq);
      let last: { at: number; commits: number } | undefined = { at: r.foundAt, commits: r.commits };
      let ran: { at: number; commits: number } | undefined = { at: r.foundAt, commits: r.commits };
      for (let o = r.from; o < (this.sourceLogs[r.p]?.length ?? 0) && last !== undefined && ran !== undefined; o += 1) {
        const rk = `${r.p}:${o}`;
        const event = this.terminalLog.find((e) => e.rk === rk && e.seq > r.seq);
        if (event === undefined || !within(event)) last = undefined;
        else if (event.at > last.at) last = event;
        // A record waiting behind one of its lane that failed again after the recovery waits for the retry policy
        // (backoffs, a hold until an operator releases it), not for the recovery: it is not timed as run again.
        const lane = this.laneOf(r.p, o);
        const behindFailure = lane !== undefined && Array.from({ length: o - r.from }, (_, i) => r.from + i).some((m) => this.laneOf(r.p, m) === lane &&
          (this.runs.some((x) => x.p === r.p && x.o === m && within(x) && x.outcome !== 'ok' && x.outcome !== 'killed' && x.outcome !== 'running') ||
            this.terminalLog.some((e) => e.rk === `${r.p}:${m}` && e.deadLetter === true && within(e))));
        if (behindFailure) continue;
        // Run again, or terminal again without a run (a value that is not JSON is dead-lettered unread).
        const run = this.runs.find((x) => x.p === r.p && x.o === o && within(x));
        const again = run === undefined || (event !== undefined && within(event) && event.seq < run.seq) ? event : run;
        if (again === undefined || !within(again)) ran = undefined;
        else if (again.at > ran.at) ran = again;
      }
      if (last !== undefined && ran !== undefined) {
        this.recoveryTimes.push({ ranAgainMs: ran.at - r.lostAt, sinceLossMs: last.at - r.lostAt, sinceFoundMs: last.at - r.foundAt, committerRuns: ran.commits - r.commits });
      }
    }
  }
}

/** A copy as the function was handed it: written back unchanged, it has the same origin, attempt and due time. */
function handedKey(item: HandOffItem): string {
  return `${copyId(item)}:${item.dueAtMs}`;
}
