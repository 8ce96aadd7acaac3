/** One Lambda execution environment as a history plays it: the store and the broker as one container sees them, and its death. */

import type { ParkedRecord, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneRelease } from '../../../src/ports/lane-head';
import type { OriginState, PartitionRef } from '../../../src/ports/partition';
import type { AdmitRecord, AdmitResult } from '../../../src/ports/admission';
import type { HandOffItem, HandOffOutcome, HandOffSink } from '../../../src/ports/handoff';
import type { CompletionPort } from '../../../src/ports/completion';
import type { HistoryStore } from './backend';
import type { Fault } from './spec';

/** The container of an invocation is gone: nothing it does takes effect any more. */
export class ContainerGone extends Error {
  constructor() {
    super('container gone');
    this.name = 'ContainerGone';
  }
}

/** One Lambda execution environment, for one invocation: it may die after a number of events. */
export class Container {
  dead = false;
  #left: number | undefined;
  #starts = 0;
  readonly #hangAt: number | undefined;
  readonly #dieAt: number | undefined;

  constructor(fault: Fault | undefined) {
    this.#left = fault?.kind === 'crash' ? fault.after : undefined;
    this.#hangAt = fault?.kind === 'timeout' ? fault.start : undefined;
    this.#dieAt = fault?.kind === 'die' ? fault.start : undefined;
  }

  /** One more event (a store call, a write, a handler start); `false`: the container died before it. */
  tick(): boolean {
    if (this.dead) return false;
    if (this.#left === undefined) return true;
    if (this.#left === 0) {
      this.dead = true;
      return false;
    }
    this.#left -= 1;
    return true;
  }

  /** A handler starts: `false` if the container dies as it does; `hang` if it is the one to hang. */
  start(): { alive: boolean; hang: boolean } {
    this.#starts += 1;
    if (this.#starts === this.#dieAt) this.dead = true;
    if (!this.tick()) return { alive: false, hang: false };
    return { alive: true, hang: this.#starts === this.#hangAt };
  }
}

/** The model's answer to a retry copy's loss check: a state that is whole (the model loses nothing). */
export const WHOLE_STATE: OriginState = {
  audit: { present: true, base: undefined, highest: undefined, generation: undefined, parked: 0, parkedInLists: 0, lanes: 0, openLanes: 0, lowestHead: undefined, recoveringUntil: undefined, recoveries: 0 },
  originDone: undefined,
};

/** The store as one container sees it: every call is an event; calls after its death fail and change nothing. */
export class ContainerStore implements HistoryStore {
  constructor(
    private readonly inner: HistoryStore,
    private readonly container: Container,
    private readonly onRelease: (ref: PartitionRef, offset: number) => void,
  ) {}

  #gate(): void {
    if (!this.container.tick()) throw new ContainerGone();
  }

  async admit(ref: PartitionRef, records: readonly AdmitRecord[], epoch?: number): Promise<AdmitResult> {
    this.#gate();
    return this.inner.admit(ref, records, epoch);
  }

  async markDone(ref: PartitionRef, offsets: readonly number[], epoch?: number): Promise<number> {
    this.#gate();
    return this.inner.markDone(ref, offsets, epoch);
  }

  async block(ref: PartitionRef, block: LaneBlock): Promise<number> {
    this.#gate();
    return this.inner.block(ref, block);
  }

  async release(ref: PartitionRef, release: LaneRelease): Promise<ParkedRecord | undefined> {
    this.#gate();
    const next = await this.inner.release(ref, release);
    this.onRelease(ref, release.headOffset);
    return next;
  }

  async advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    this.#gate();
    return this.inner.advance(ref, lane, expected, next);
  }

  async laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    this.#gate();
    return this.inner.laneHead(ref, lane);
  }

  /**
   * A retry copy finding its lane free reads what it judges a loss by, one step of the history. The model has no such
   * reading: it answers a whole state (it loses nothing).
   */
  async originState(ref: PartitionRef, origin: number): Promise<OriginState> {
    this.#gate();
    return this.inner.originState?.(ref, origin) ?? WHOLE_STATE;
  }

  /** Part of the copy's loss check, gated with `originState` (one step, as the check was). */
  get reportLoss(): CompletionPort['reportLoss'] {
    const inner = this.inner;
    return inner.reportLoss === undefined ? undefined : (ref, origin) => inner.reportLoss!(ref, origin);
  }

  /** Whether the partition's marker is known to have landed (the model has no first minute: always). */
  async durablyMarked(ref: PartitionRef): Promise<boolean> {
    if (this.inner.durablyMarked === undefined) return true;
    this.#gate();
    return this.inner.durablyMarked(ref);
  }

  async claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    this.#gate();
    return this.inner.claimHead(ref, lane, expected, claim);
  }

  withLimits(): CompletionPort {
    return this;
  }

  async trackedPartitions(group: string): Promise<PartitionRef[]> {
    this.#gate();
    return this.inner.trackedPartitions(group);
  }

  async laneHeads(ref: PartitionRef): Promise<LaneHead[]> {
    this.#gate();
    return this.inner.laneHeads(ref);
  }

  async firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined> {
    this.#gate();
    return this.inner.firstParked(ref, lane);
  }
}

/** The broker as one container writes to it: acknowledged copies land in the history's logs. */
export class ContainerSink implements HandOffSink {
  constructor(
    private readonly container: Container,
    private readonly land: (items: readonly HandOffItem[]) => void,
  ) {}

  async write(items: readonly HandOffItem[]): Promise<HandOffOutcome[]> {
    if (!this.container.tick()) throw new ContainerGone();
    this.land(items);
    return items.map(() => ({ status: 'written' }));
  }
}
