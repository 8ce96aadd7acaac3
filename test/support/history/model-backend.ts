/** The history backend on the in-memory completion model (the real Redis one is ../history-redis.ts). */

import { planCommit } from '../../../src/committer/plan';
import type { ParkedRecord, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneRelease } from '../../../src/ports/lane-head';
import type { AdmitRecord, AdmitResult } from '../../../src/ports/admission';
import type { PartitionRef } from '../../../src/ports/partition';
import type { CompletionPort } from '../../../src/ports/completion';
import { CompletionModelStore } from '../../../src/testing/completion-model';
import { type CommitOutcome, type HistoryBackend, type HistoryStore, tpKey } from './backend';

/** The in-memory model of the Redis layout (docs/ARCHITECTURE.md) (`CompletionModelStore`), with what the re-drive reads. */
export class ModelHistoryStore implements HistoryStore {
  readonly model: CompletionModelStore;

  constructor(model = new CompletionModelStore()) {
    this.model = model;
  }

  // The model has no epochs: nothing in a history changes owners.
  admit(ref: PartitionRef, records: readonly AdmitRecord[]): Promise<AdmitResult> {
    return this.model.admit(ref, records);
  }

  markDone(ref: PartitionRef, offsets: readonly number[]): Promise<number> {
    return this.model.markDone(ref, offsets);
  }

  block(ref: PartitionRef, block: LaneBlock): Promise<number> {
    return this.model.block(ref, block);
  }

  // The model keeps no claims and is never rebuilt: it reads no hold (a release is refused only for another head).
  release(ref: PartitionRef, release: LaneRelease): Promise<ParkedRecord | undefined> {
    return this.model.release(ref, release);
  }

  advance(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, next: HeadAdvance): Promise<void> {
    return this.model.advance(ref, lane, expected, next);
  }

  laneHead(ref: PartitionRef, lane: string): Promise<LaneHead | undefined> {
    return this.model.laneHead(ref, lane);
  }

  claimHead(ref: PartitionRef, lane: string, expected: { offset: number; attempt: number }, claim: HeadClaimRequest): Promise<HeadClaim> {
    return this.model.claimHead(ref, lane, expected, claim);
  }

  withLimits(): CompletionPort {
    return this;
  }

  async trackedPartitions(group: string): Promise<PartitionRef[]> {
    return [...this.model.partitions.keys()]
      .map((id) => id.split('\n'))
      .filter(([g]) => g === group)
      .map(([g, topic, partition]) => ({ group: g!, topic: topic!, partition: Number(partition) }));
  }

  async laneHeads(ref: PartitionRef): Promise<LaneHead[]> {
    return [...this.model.partition(ref).lanes.entries()].map(([lane, head]) => ({ ...head, lane }));
  }

  async firstParked(ref: PartitionRef, lane: string): Promise<ParkedRecord | undefined> {
    return this.model.partition(ref).park.get(lane)?.[0];
  }
}

/** The per-offset state of the model, which it keeps private: the ghost reads done bits for the G7 check. */
export interface ModelInternals {
  readonly done: Set<number>;
  readonly base: number | undefined;
}

/** A backend on the in-memory model; the committer's plan is `planCommit`, as `runCommitter` uses it. */
export class ModelBackend implements HistoryBackend {
  readonly group = 'grp';
  readonly source = 'orders';
  readonly store: ModelHistoryStore;
  /** What the completion group has committed (Kafka, in the AWS topology). */
  readonly #committed = new Map<string, number>();

  /** `caps`: the window cap (the model has no parked cap). */
  constructor(caps?: { readonly maxWindow: number }) {
    this.store = new ModelHistoryStore(new CompletionModelStore(caps?.maxWindow));
  }

  async doneOffsets(ref: PartitionRef, offsets: readonly number[]): Promise<Set<number>> {
    const model = this.store.model.partition(ref).model as unknown as ModelInternals;
    const base = model.base;
    return new Set(offsets.filter((o) => base !== undefined && (o < base || model.done.has(o))));
  }

  async parkedOffsets(ref: PartitionRef): Promise<Set<number>> {
    return new Set([...this.store.model.partition(ref).park.values()].flatMap((list) => list.map((r) => r.offset)));
  }

  async blockedLanes(ref: PartitionRef): Promise<number> {
    return this.store.model.partition(ref).lanes.size;
  }

  readonly durable = false;

  async commit(nowMs: number): Promise<CommitOutcome> {
    const refs = await this.store.trackedPartitions(this.group);
    const frontiers = refs.map((ref) => {
      const { model } = this.store.model.partition(ref);
      const frontier = model.frontier();
      return { topic: ref.topic, partition: ref.partition, reading: frontier === undefined ? undefined : { base: 0, highest: model.admittedUpTo, frontier } };
    });
    const committed = [...this.#committed.entries()].map(([key, offset]) => {
      const cut = key.lastIndexOf('-');
      return { topic: key.slice(0, cut), partition: Number(key.slice(cut + 1)), offset };
    });
    const plan = planCommit({ frontiers, committed, nowMs });
    for (const move of plan.moves) this.#committed.set(tpKey(move.topic, move.partition), move.to);
    // The committer trims while it reads: trimming never moves the frontier.
    for (const ref of refs) this.store.model.partition(ref).model.trim();
    return { committed: new Map(this.#committed), losses: [] };
  }
}
