import { randomBytes } from 'node:crypto';

/**
 * The durable marker: what the committer writes into the commit metadata of the completion group
 * `<group>.lanes` next to each committed offset, `kl1:<generation>:<highest>`. Kafka keeps it as durably as the
 * offset itself, so it tells the next committer run (or `kafka-lanes recover`) what Redis must still hold:
 * the generation stamped into the partition's `meta` when its state was made whole, and the highest offset it
 * had admitted then.
 */
export interface DurableMarker {
  readonly generation: string;
  readonly highest: number;
  /**
   * The lowest offset the commits vouch for: where the first state stamped with a generation was born (the
   * committer's first commit of the partition stamps it), lowered by a recovery that started below it. Offsets
   * below it were never seen by a state whose loss a marker could reveal, so a retry copy of one that finds its
   * lane free reports a loss; the committer then recovers from there (`recoveryStart`). Absent in older markers.
   */
  readonly since?: number | undefined;
}

const PREFIX = 'kl1';

/** A fresh generation: 12 hex digits, never `:`. */
export function newGeneration(): string {
  return randomBytes(6).toString('hex');
}

/**
 * @example
 * encodeMarker({ generation: '8c1f0a2b3c4d', highest: 41 }); // 'kl1:8c1f0a2b3c4d:41'
 * encodeMarker({ generation: '8c1f0a2b3c4d', highest: 41, since: 0 }); // 'kl1:8c1f0a2b3c4d:41:0'
 */
export function encodeMarker(marker: DurableMarker): string {
  const since = marker.since === undefined ? '' : `:${marker.since}`;
  return `${PREFIX}:${marker.generation}:${marker.highest}${since}`;
}

/** The marker in a commit's metadata; `undefined` for none (a commit of an older version, or of someone else). */
export function decodeMarker(metadata: string | null | undefined): DurableMarker | undefined {
  if (typeof metadata !== 'string') return undefined;
  const [prefix, generation, highest, since, ...rest] = metadata.split(':');
  if (prefix !== PREFIX || rest.length > 0 || generation === undefined || !/^[0-9a-f]{1,32}$/.test(generation)) return undefined;
  const value = Number(highest);
  if (!Number.isSafeInteger(value) || value < -1) return undefined;
  if (since === undefined) return { generation, highest: value };
  const from = since === '' ? Number.NaN : Number(since);
  return Number.isSafeInteger(from) && from >= 0 ? { generation, highest: value, since: from } : undefined;
}

/** What Kafka's completion group holds for a partition: its committed offset and marker, if any. */
export interface DurableView {
  readonly committed: number | undefined;
  readonly marker: DurableMarker | undefined;
}
