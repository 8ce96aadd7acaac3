import type { CommitterState } from '../completion/committer-state';
import type { CompletionStore } from '../completion/store';
import type { PartitionRef, PartitionAudit } from '../ports/partition';
import type { CommitMove, CommittedOffset } from './types';
import { partitionId } from './plan';
import { findLoss, type Loss } from '../durability/loss';
import { decodeMarker, encodeMarker, newGeneration, type DurableView } from '../durability/marker';

/** One partition as a committer run finds it: its audit, what Kafka holds, and the loss found, if any. */
export interface PartitionCheck {
  readonly ref: PartitionRef;
  readonly audit: PartitionAudit;
  readonly durable: DurableView;
  readonly loss: Loss | undefined;
  /** The generation its commits carry from this run (stamped now when it had none). */
  readonly generation: string | undefined;
  /** What the event source mapping committed for the partition, when known. */
  readonly delivered?: number | undefined;
}

/**
 * The partitions a run must look at: the ones Redis tracks, and the ones the completion group carries a marker
 * for (Redis may have lost its tracked set with the rest).
 */
export function partitionsToCheck(group: string, tracked: readonly PartitionRef[], committed: readonly CommittedOffset[]): PartitionRef[] {
  const byId = new Map(tracked.map((ref) => [partitionId(ref), ref]));
  for (const c of committed) {
    if (decodeMarker(c.metadata) !== undefined && !byId.has(partitionId(c))) byId.set(partitionId(c), { group, topic: c.topic, partition: c.partition });
  }
  return [...byId.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

/** One partition as a run read it before its checks: its frontier, and what the event source committed, when known. */
export interface PartitionReading {
  readonly ref: PartitionRef;
  readonly frontier: number | undefined;
  readonly delivered: number | undefined;
}

/**
 * Audits every partition against what the completion group holds (offset and marker). A partition whose state
 * has never been stamped with a generation, and whose commits carry no marker yet, gets one now: from then on a
 * loss of its state is told apart from a partition that is new.
 */
export async function checkPartitions(
  doors: { readonly store: Pick<CompletionStore, 'audit'>; readonly state: Pick<CommitterState, 'stamp'> },
  partitions: readonly PartitionReading[],
  committed: readonly CommittedOffset[],
  nowMs: number,
): Promise<PartitionCheck[]> {
  const byId = new Map(committed.map((c) => [partitionId(c), c]));
  return Promise.all(partitions.map(async ({ ref, frontier, delivered }) => {
    const audit = await doors.store.audit(ref);
    const entry = byId.get(partitionId(ref));
    const durable: DurableView = { committed: entry?.offset, marker: decodeMarker(entry?.metadata) };
    const loss = findLoss({ audit, frontier, durable, nowMs, delivered });
    let generation = audit.generation;
    if (loss === undefined && audit.present && generation === undefined && durable.marker === undefined) {
      generation = await doors.state.stamp(ref, newGeneration());
    }
    return { ref, audit, durable, loss, generation, delivered };
  }));
}

/**
 * Pure: the moves a run commits to the durable completion group. A parked record or a lane head is not terminal,
 * so no move goes past the lowest head of a blocked lane; every move carries the marker (with where the state was
 * born: the lowest offset the commits vouch for, see `DurableMarker.since`); a partition whose
 * commits lack its current marker gets one at its committed offset. Partitions with a loss are left alone: the
 * recovery deals with them.
 *
 * @example
 * durableMoves([{ topic: 'orders', partition: 0, from: 10, to: 20 }], checks); // to 14 when lane head 14 is blocked
 */
export function durableMoves(moves: readonly CommitMove[], checks: readonly PartitionCheck[]): CommitMove[] {
  const byId = new Map(checks.map((c) => [partitionId(c.ref), c]));
  const out: CommitMove[] = [];
  const moved = new Set<string>();
  for (const move of moves) {
    const check = byId.get(partitionId(move));
    if (check?.loss !== undefined) continue;
    const lowest = check?.audit.lowestHead;
    const to = lowest === undefined ? move.to : Math.min(move.to, lowest);
    // Held back at its committed offset by a blocked lane: only its marker may still need writing (below).
    if (move.from !== undefined && to <= move.from) continue;
    moved.add(partitionId(move));
    const metadata = check?.generation === undefined ? undefined : encodeMarker({ generation: check.generation, highest: check.audit.highest ?? to - 1, since: check.audit.born });
    out.push({ topic: move.topic, partition: move.partition, from: move.from, to, ...(metadata === undefined ? {} : { metadata }) });
  }
  for (const check of checks) {
    const { committed, marker } = check.durable;
    if (check.loss !== undefined || moved.has(partitionId(check.ref)) || check.generation === undefined || committed === undefined) continue;
    if (marker?.generation === check.generation) continue;
    out.push({
      topic: check.ref.topic,
      partition: check.ref.partition,
      from: committed,
      to: committed,
      metadata: encodeMarker({ generation: check.generation, highest: check.audit.highest ?? committed - 1, since: check.audit.born }),
    });
  }
  return out;
}
