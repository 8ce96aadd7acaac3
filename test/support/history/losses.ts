/** Redis losing state, committer runs (with their checks and recoveries), re-drives and operator releases. */

import type { CompletionStore } from '../../../src/completion/store';
import type { RecordLog } from '../../../src/recovery/read-range';
import { type KafkaRecordInput, decodeKafkaEvent, encodeKafkaEvent } from '../../../src/event';
import { releaseHeldLane } from '../../../src/operations/lanes';
import { redriveExpiredLeases } from '../../../src/recovery/redrive';
import { type LossFound, tpKey } from './backend';
import { Container } from './container';
import type { Fault, LoseStep } from './spec';
import { HistoryState } from './state';

export class HistoryLosses extends HistoryState {
  /** Redis loses state: what it lost stands undetected on the partitions it touched until a committer run finds it. */
  protected async lose(step: LoseStep, index: number): Promise<void> {
    const losses = this.backend.losses!;
    this.mustFind.clear();
    const all = this.sourceLogs.map((_, p) => p);
    // Before the committer's first commit of a partition no marker tells what Redis held: a loss then is found by a
    // copy of a lost lane head (a retry, deferred or watch copy) reporting it (docs/durability.md, "The first minute").
    const unmarked = [...this.delivered].filter((key) => {
      const cut = key.lastIndexOf('-');
      return !losses.hasMarker(key.slice(0, cut), Number(key.slice(cut + 1)));
    });
    const heldOn = this.spec.deadLetter === 'hold' ? [...this.deadLetters.keys()].map((rk) => tpKey(this.backend.source, Number(rk.split(':')[0]))) : [];
    if (heldOn.some((key) => !unmarked.includes(key))) this.lossesHeldMarked += 1;
    if (unmarked.length > 0) {
      this.lossesUnmarked += 1;
      if (heldOn.some((key) => unmarked.includes(key))) this.lossesHeld += 1;
      this.trace.push(`  (${unmarked.join(', ')} have no durable marker yet)`);
      for (const key of unmarked) this.unmarkedLoss.add(key);
    }
    let touched: number[] = all;
    if (step.what === 'lanes') {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: 0 };
      if (await losses.loseLanes(ref)) this.lanesLost += 1;
      this.trace.push('  Redis lost the lanes hash of partition 0');
      touched = [0];
    } else if (step.what === 'key') {
      const lost = await losses.loseKey(step.pick);
      if (lost === undefined) return;
      this.trace.push(`  Redis lost ${lost.key}`);
      touched = lost.partition === undefined ? [] : lost.partition.topic === this.backend.source ? [lost.partition.partition] : [];
    } else {
      const snapshot = step.what === 'writes' ? this.snapshots.get(index - step.back) : undefined;
      await losses.restore(snapshot);
      // A recovery made after the snapshot ran its records again from their first attempt (`afterLosses` forgot their
      // releases); the snapshot it restores knows nothing of that recovery and has those released before it released
      // still, as they were: those records stay terminal, and a later record of their lane may run before them.
      for (const rk of this.releasedAt.get(index - step.back) ?? []) this.released.add(rk);
      this.trace.push(snapshot === undefined ? '  Redis lost every key of the group' : `  Redis lost every write since the start of step ${index - step.back}`);
      if (snapshot === undefined) {
        for (const p of all) if (losses.hasMarker(this.backend.source, p)) this.mustFind.add(p);
      }
    }
    this.losses += 1;
    for (const p of touched) {
      this.undetected.add(p);
      if (!this.lostAt.has(p)) this.lostAt.set(p, this.paced());
    }
  }

  /** The operator releases every held lane of the source partitions. */
  protected async releaseHeld(): Promise<void> {
    const container = new Container(undefined);
    const invocation = (this.invocations += 1);
    const parts = { options: this.options, store: this.storeOf(container) as unknown as CompletionStore, sink: this.sinkOf(container, invocation), now: this.clock.now };
    for (const p of this.sourceLogs.keys()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      for (const head of await this.backend.store.laneHeads(ref)) {
        if (head.state !== 'held') continue;
        const { next } = await releaseHeldLane(parts, ref, head.lane);
        this.operatorReleases += 1;
        this.trace.push(`  #${invocation} operator released held ${p}:${head.offset}, next ${String(next)}`);
      }
    }
  }

  /** The committer's re-drive of lane heads whose lease expired. */
  protected async redrive(fault: Fault | undefined): Promise<void> {
    const container = new Container(fault);
    const invocation = (this.invocations += 1);
    try {
      this.redriven += (await redriveExpiredLeases({
        store: this.storeOf(container),
        options: this.options,
        sink: this.sinkOf(container, invocation),
        now: this.clock.now,
      })).length;
    } catch (error) {
      if (!container.dead) throw error;
    }
    if (container.dead) {
      this.crashes += 1;
      this.trace.push(`  re-drive #${invocation} crashed`);
    }
  }

  /** A committer run after every step; G2 on every source partition. */
  protected async commitAndCheck(): Promise<void> {
    const container = new Container(undefined);
    const invocation = (this.invocations += 1);
    this.lossLog.length = 0;
    this.commits += 1;
    const { committed, losses } = await this.backend.commit(this.clock.now(), {
      source: this.recordLog(),
      sink: this.sinkOf(container, invocation),
      options: this.options,
      telemetry: this.telemetry,
      delivered: async (topics) => [...this.position].flatMap(([key, offset]) => {
        const cut = key.lastIndexOf('-');
        const topic = key.slice(0, cut);
        return topics.includes(topic) ? [{ topic, partition: Number(key.slice(cut + 1)), offset }] : [];
      }),
    });
    this.afterLosses(losses);
    for (const [key, before] of this.committed) {
      const now = committed.get(key);
      // The one move back: to where a retry copy proved a commit made before any marker passed lost records.
      const rewound = losses.some((loss) => tpKey(loss.topic, loss.partition) === key && loss.rewoundTo === now && this.unmarkedLoss.has(key));
      if ((now ?? -1) < before && !rewound) this.violate(`committed offset of ${key} went back from ${before} to ${String(now)} (G2)`);
      if (rewound) this.rewinds += 1;
      if (rewound) this.trace.push(`  committed offset of ${key} moved back from ${before} to ${String(now)}`);
    }
    this.committed = committed;
    for (const [p, log] of this.sourceLogs.entries()) {
      const ref = { group: this.backend.group, topic: this.backend.source, partition: p };
      const c = committed.get(tpKey(ref.topic, p));
      if (c === undefined) continue;
      if (c > log.length) this.violate(`committed ${c} on partition ${p} is past the last record ${log.length - 1}`);
      const parked = await this.backend.parkedOffsets(ref, this.storeLanes(p));
      // Lost before the first marker: what the first commit passed below where its marker vouches from is found
      // again when a retry copy of it reports (checked at the end: every record terminal, G1).
      const unvouched = this.unmarkedLoss.has(tpKey(ref.topic, p)) ? (this.backend.losses?.markerSince(ref.topic, p) ?? 0) : 0;
      for (let o = unvouched; o < Math.min(c, log.length); o += 1) {
        const rk = `${p}:${o}`;
        // G2: below the committed offset, every record is terminal or handed off (a retry copy acknowledged, or parked in Redis).
        // Durable: Redis is no hand-off; a record of a lane is handed off by being terminal (its lane head blocks the commit).
        if (this.backend.durable) {
          if (!this.terminal(rk) && !(this.copied.has(rk) && this.laneOf(p, o) === undefined)) {
            this.violate(`committed ${c} on partition ${p} passes ${rk}, which is neither done, dead-lettered nor an independent record handed off to a retry topic (G2 against the durable completion group)`);
          }
          continue;
        }
        if (!this.terminal(rk) && !this.copied.has(rk) && !parked.has(o)) {
          this.violate(`committed ${c} on partition ${p} passes ${rk}, which is neither done, dead-lettered, handed off to a retry topic nor parked (G2)`);
        }
      }
    }
    this.trace.push(`  committed ${JSON.stringify([...committed])}`);
  }

  /** The history's source log as a recovery reads it from Kafka. */
  protected recordLog(): RecordLog {
    const logOf = (topic: string, partition: number): KafkaRecordInput[] =>
      topic === this.backend.source ? (this.sourceLogs[partition] ?? []) : (this.tierLogs.get(topic) ?? []).map((c) => c.record);
    return {
      offsets: async (topic, partition) => ({ low: 0, end: logOf(topic, partition).length }),
      read: async (topic, partition, from, end) => {
        const records = logOf(topic, partition).slice(from, end);
        return records.length === 0 ? [] : decodeKafkaEvent(encodeKafkaEvent({ source: 'SelfManagedKafka', records })).partitions[0]!.records;
      },
    };
  }

  /** What a committer run found lost: logged, and from then on the partition's runs are held to lane order again. */
  protected afterLosses(losses: readonly LossFound[]): void {
    const found = new Set<number>();
    for (const loss of losses) {
      this.lossesFound += 1;
      const key = tpKey(loss.topic, loss.partition);
      this.trace.push(`  committer found ${key} lost (${loss.reason})${loss.recoveredFrom === undefined ? `, not recovered: ${String(loss.error)}` : `, recovered from ${loss.recoveredFrom}`}`);
      if (!this.lossLog.includes(key)) this.violate(`the committer found ${key} lost (${loss.reason}) but logged no error naming it`);
      if (loss.topic !== this.backend.source) continue;
      const p = loss.partition;
      found.add(p);
      // A loss in the first minute whose records a commit made before any marker passed stays undetected while this
      // recovery starts above one of them that is not terminal, or (`hold`) that holds its lane: only its copy (a
      // retry or watch copy) reports it, later (a second recovery, moving the completion group back;
      // docs/durability.md, "Known limits"). Until then its lane may run ahead.
      const below = this.unmarkedLoss.has(key) && loss.recoveredFrom !== undefined &&
        Array.from({ length: Math.min(loss.recoveredFrom, this.sourceLogs[p]?.length ?? 0) }, (_, o) => o).some((o) => !this.laneTerminal(`${p}:${o}`));
      const lostAt = this.lostAt.get(p) ?? this.paced();
      if (below) this.trace.push(`  (records of ${key} below ${String(loss.recoveredFrom)} are not terminal or hold their lane: their first-minute loss is not found yet)`);
      else {
        this.lostAt.delete(p);
        this.undetected.delete(p);
        for (let i = this.blind.length - 1; i >= 0; i -= 1) if (this.blind[i]!.p === p) this.blind.splice(i, 1);
      }
      if (loss.recoveredFrom === undefined) continue;
      this.recoveries += 1;
      const from = loss.recoveredFrom;
      this.recoveryLog.push({ p, from, seq: this.seq, lostAt, foundAt: this.paced(), commits: this.commits });
      this.recovered.set(p, { seq: this.seq, from });
      // Every record from the durable frontier on runs again from its first attempt.
      for (let o = from; o < (this.sourceLogs[p]?.length ?? 0); o += 1) {
        this.maxAttempt.delete(`${p}:${o}`);
        this.released.delete(`${p}:${o}`);
      }
    }
    for (const p of this.mustFind) {
      if (!found.has(p)) this.violate(`Redis lost every key of the group while partition ${p} had a durable marker, and the committer did not find it`);
    }
    this.mustFind.clear();
  }
}
