import type { GroupStatus } from './api';

type Partition = GroupStatus['partitions'][number];

/**
 * A partition's recoveries from Kafka after Redis lost its state (docs/durability.md): how many, and when the
 * last one began. Nothing for a partition never recovered.
 */
export function RecoveryBadge({ p }: { p: Partition }) {
  if (p.recoveries === 0 && !p.recovering) return null;
  const last = p.lastRecoveredAtMs === undefined ? '' : ` (last at ${new Date(p.lastRecoveredAtMs).toLocaleString()})`;
  return (
    <>
      {p.recoveries > 0 && (
        <span
          class="badge recovered"
          data-testid="recovered"
          title="Redis lost this partition's completion state; its records from the committed offset on were read again from Kafka and run again, in order per lane"
        >
          recovered {p.recoveries}×{last}
        </span>
      )}
      {p.recovering && <span class="badge recovering" data-testid="recovering-now">recovering now</span>}
    </>
  );
}

/** A banner while any partition is fenced for a recovery: its records are refused until the recovery ends. */
export function RecoveringBanner({ partitions }: { partitions: readonly Partition[] }) {
  const fenced = partitions.filter((p) => p.recovering);
  if (fenced.length === 0) return null;
  return (
    <p class="warning" role="status" data-testid="recovering">
      Recovering from Kafka after Redis lost state: {fenced.map((p) => `${p.topic}-${p.partition}`).join(', ')}. Until the recovery
      ends, new records of {fenced.length === 1 ? 'this partition are' : 'these partitions are'} refused and the event source delivers
      them again later.
    </p>
  );
}
