import type { ParkedRecord, CopyClaim, CopyClaimRequest, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneRelease } from '../ports/lane-head';
import { LaneConflictError, NotHeadError, StaleAttemptError } from '../ports/errors';
import type { AdmitRecord, AdmitResult, AdmitStatus } from '../ports/admission';
import type { PartitionRef } from '../ports/partition';
import type { RecordSteps } from '../ports/effects';
import type { CompletionPort } from '../ports/completion';
import { copyKey } from '../completion/keys';
import { recordStepsId } from './effects-model';

/**
 * A plain in-memory model of one partition's completion state, written from the Redis layout of docs/ARCHITECTURE.md and
 * nothing else: the property test checks that the Redis engine agrees with it on every frontier.
 */
export class CompletionModel {
  private readonly done = new Set<number>();
  private base: number | undefined;
  private highest = -1;

  constructor(private readonly maxWindow: number) {}

  frontier(): number | undefined {
    if (this.base === undefined) return undefined;
    let f = this.base;
    while (f <= this.highest && this.done.has(f)) f += 1;
    return f;
  }

  /** Same statuses as the engine for independent records: run, duplicate or refused. */
  admit(offsets: number[]): Array<'run' | 'duplicate' | 'refused'> {
    if (this.base === undefined && offsets.length > 0) {
      this.base = offsets[0]!;
      this.highest = this.base - 1;
    }
    return offsets.map((o) => {
      const base = this.base!;
      if (o < base || this.done.has(o)) return 'duplicate';
      if (o <= this.highest) return 'run';
      const frontier = this.frontier()!;
      // With everything delivered already done, the window restarts at o, whatever the distance.
      if (frontier <= this.highest && o >= frontier + this.maxWindow) return 'refused';
      for (let gap = this.highest + 1; gap < o; gap += 1) this.done.add(gap);
      this.highest = o;
      return 'run';
    });
  }

  mark(offsets: number[]): void {
    for (const o of offsets) this.done.add(o);
  }

  isDone(offset: number): boolean {
    return this.done.has(offset) || (this.base !== undefined && offset < this.base);
  }

  /** Done bits lost, as when a crash came before they were flushed: the records run again when redelivered. */
  unmark(offsets: number[]): void {
    for (const o of offsets) this.done.delete(o);
  }

  /** Offsets below base are done by definition; trimming must not change the frontier. */
  trim(): void {
    const f = this.frontier();
    if (f === undefined || this.base === undefined) return;
    const bytes = Math.floor((f - this.base) / 8);
    this.base += bytes * 8;
  }

  get admittedUpTo(): number {
    return this.highest;
  }
}

/**
 * The completion-store port of the engine, in memory: several partitions, lanes and park lists, written from
 * the Redis layout of docs/ARCHITECTURE.md like `CompletionModel` (one per partition, for done bits and the frontier). Engine unit
 * tests run against it, so ordering, deadline and hand-off logic is tested without Redis.
 */
export class CompletionModelStore implements CompletionPort {
  readonly partitions = new Map<string, { model: CompletionModel; lanes: Map<string, LaneHead>; park: Map<string, ParkedRecord[]> }>();
  /** Script calls made, by name: what a Redis store would have sent. */
  readonly calls: string[] = [];
  /**
   * The step results in the same Redis (an `EffectsModel`'s): once set, `markDone` deletes the step results it is
   * given in the same call, as the Redis store does.
   */
  stepResults: Map<string, unknown> | undefined = undefined;

  get forgetsSteps(): boolean {
    return this.stepResults !== undefined;
  }

  constructor(private readonly maxWindow = 1_000_000) {}

  partition(ref: PartitionRef): { model: CompletionModel; lanes: Map<string, LaneHead>; park: Map<string, ParkedRecord[]> } {
    const id = `${ref.group}\n${ref.topic}\n${ref.partition}`;
    let p = this.partitions.get(id);
    if (p === undefined) {
      p = { model: new CompletionModel(this.maxWindow), lanes: new Map(), park: new Map() };
      this.partitions.set(id, p);
    }
    return p;
  }

  withLimits(): CompletionPort {
    return this;
  }

  async admit(ref: PartitionRef, records: readonly AdmitRecord[]): Promise<AdmitResult> {
    this.calls.push('admit');
    const p = this.partition(ref);
    const seenUpTo = p.model.admittedUpTo;
    const statuses: AdmitStatus[] = [];
    const handoffHeads: LaneHead[] = [];
    const refusedLanes = new Set<string>();
    for (const record of records) {
      let status: AdmitStatus = p.model.admit([record.offset])[0]!;
      if (status === 'run' && record.lane !== undefined && refusedLanes.has(record.lane)) status = 'refused';
      if (status === 'run' && record.lane !== undefined) {
        const head = p.lanes.get(record.lane);
        if (head !== undefined) {
          if (head.offset === record.offset) {
            status = 'handoff';
            handoffHeads.push({ ...head, lane: '' });
          } else if (record.offset < head.offset) {
            p.model.mark([record.offset]);
            status = 'duplicate';
          } else {
            const payload = typeof record.payload === 'function' ? record.payload() : record.payload ?? '';
            this.#parkList(p, record.lane).push({ offset: record.offset, payload });
            p.model.mark([record.offset]);
            status = 'parked';
          }
        }
      }
      if (status === 'refused' && record.lane !== undefined) refusedLanes.add(record.lane);
      statuses.push(status);
    }
    const frontier = p.model.frontier();
    return {
      statuses,
      handoffHeads,
      backPressure: statuses.includes('refused'),
      window: frontier === undefined ? undefined : { base: 0, highest: p.model.admittedUpTo, frontier },
      seenUpTo,
    };
  }

  async markDone(ref: PartitionRef, offsets: readonly number[], _epoch = 0, steps: readonly RecordSteps[] = []): Promise<number> {
    this.calls.push('mark');
    this.partition(ref).model.mark([...offsets]);
    for (const { offset } of steps) this.stepResults!.delete(recordStepsId({ ref, offset }));
    return offsets.length;
  }

  async block(ref: PartitionRef, { head, parked = [], nowMs = Date.now() }: LaneBlock): Promise<number> {
    this.calls.push('block');
    const p = this.partition(ref);
    const current = p.lanes.get(head.lane);
    if (current !== undefined && current.offset !== head.offset) throw new LaneConflictError(`lane blocked on ${current.offset}`);
    if (current === undefined) {
      p.lanes.set(head.lane, { ...head, dueAtMs: head.dueAtMs ?? nowMs, reason: head.reason ?? '', leaseUntilMs: 0 });
    }
    for (const record of parked) {
      this.#parkList(p, head.lane).push(record);
      p.model.mark([record.offset]);
    }
    return parked.length;
  }

  async release(ref: PartitionRef, { lane, headOffset, nextAttempt = 1, nowMs = Date.now(), leaseUntilMs = 0 }: LaneRelease): Promise<ParkedRecord | undefined> {
    this.calls.push('release');
    const p = this.partition(ref);
    const head = p.lanes.get(lane);
    if (head === undefined || head.offset !== headOffset) throw new NotHeadError(`not the head of ${lane}`);
    p.model.mark([head.offset]);
    const list = this.#parkList(p, lane);
    if (list[0]?.offset === head.offset) list.shift();
    const next = list[0];
    if (next === undefined) {
      p.lanes.delete(lane);
      return undefined;
    }
    p.lanes.set(lane, { lane, offset: next.offset, attempt: nextAttempt, state: 'retrying', dueAtMs: nowMs, reason: '', leaseUntilMs });
    return next;
  }

  async advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    this.calls.push('advance');
    const p = this.partition(ref);
    const head = p.lanes.get(lane);
    if (head === undefined || head.offset !== expected.offset) throw new NotHeadError(`not the head of ${lane}`);
    if (head.attempt !== expected.attempt) throw new StaleAttemptError(`head at attempt ${head.attempt}`);
    const list = this.#parkList(p, lane);
    if (next.leaseUntilMs > 0 && next.payload !== undefined && list[0]?.offset !== head.offset) list.unshift({ offset: head.offset, payload: next.payload });
    p.lanes.set(lane, { lane, offset: head.offset, attempt: next.attempt, state: next.state, dueAtMs: next.dueAtMs, reason: next.reason ?? '', leaseUntilMs: next.leaseUntilMs });
  }

  async laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    this.calls.push('laneHead');
    return this.partition(ref).lanes.get(lane);
  }

  /** As `claim-1.lua`: the claim lives on the head's entry, so moving the head (a new entry) drops it. */
  async claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    this.calls.push('claim');
    const lanes = this.partition(ref).lanes;
    const head = lanes.get(lane);
    if (head === undefined || head.offset !== expected.offset || head.attempt !== expected.attempt || head.state !== 'retrying') return { status: 'not-head', head };
    const held = this.#claims.get(head);
    if (held !== undefined && held.copy !== claim.copy && held.untilMs > claim.nowMs) return { status: 'claimed-elsewhere', untilMs: held.untilMs };
    this.#claims.set(head, { copy: claim.copy, untilMs: Math.ceil(claim.untilMs) });
    return { status: 'claimed' };
  }

  readonly #claims = new WeakMap<LaneHead, { copy: string; untilMs: number }>();

  /** As `claim-copy-1.lua`: unordered mode's claim of a retry copy by (origin, attempt). */
  async claimCopy(ref: PartitionRef, { offset, attempt, copy, done }: CopyClaimRequest): Promise<CopyClaim> {
    this.calls.push('claimCopy');
    const key = copyKey(ref, offset);
    const entry = this.copies.get(key);
    if (!done && entry !== undefined && (entry.state === 'done' || entry.attempt > attempt || (entry.attempt === attempt && entry.copy !== copy))) return 'stale';
    this.copies.set(key, { attempt, copy, state: done ? 'done' : 'run' });
    return 'claimed';
  }

  /** Unordered mode's copy entries (`claimCopy`), by key. */
  readonly copies = new Map<string, { attempt: number; copy: string; state: 'run' | 'done' }>();

  #parkList(p: { park: Map<string, ParkedRecord[]> }, lane: string): ParkedRecord[] {
    let list = p.park.get(lane);
    if (list === undefined) {
      list = [];
      p.park.set(lane, list);
    }
    return list;
  }
}
