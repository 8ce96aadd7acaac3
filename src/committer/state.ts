import type { CommitterState } from '../completion/committer-state';
import { CorruptStateError } from './errors';
import { partitionId } from './plan';
import type { PreviousReading } from './types';

/**
 * What one committer run leaves for the next: per partition, the frontier, the highest delivered offset
 * and since when the frontier has had its value. A scheduled function keeps no memory between runs, so
 * this lives in Redis (one hash per group, read and written through the committer state's door) and is written only
 * by the run holding the lease.
 */

/** The readings' calls on the committer state's door. */
export type ReadingsCalls = Pick<CommitterState, 'readingsKey' | 'readings' | 'writeReadings'>;

/** Encodes the fields and values of the readings hash. */
export function encodeReadings(readings: readonly PreviousReading[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const r of readings) fields[partitionId(r)] = `${r.frontier}:${r.highest}:${r.sinceMs}`;
  return fields;
}

/** Decodes the readings hash (`HGETALL`); anything malformed is a `CorruptStateError`. */
export function decodeReadings(hash: Record<string, string>, where: string): PreviousReading[] {
  const readings: PreviousReading[] = [];
  for (const [field, value] of Object.entries(hash)) {
    const cut = field.lastIndexOf('\n');
    const parts = value.split(':');
    const [frontier, highest, sinceMs] = parts.map(Number);
    const partition = Number(field.slice(cut + 1));
    if (
      cut < 1 ||
      !Number.isSafeInteger(partition) ||
      parts.length !== 3 ||
      frontier === undefined ||
      highest === undefined ||
      sinceMs === undefined ||
      ![frontier, highest, sinceMs].every(Number.isSafeInteger)
    ) {
      throw new CorruptStateError(`${where}: cannot read field ${JSON.stringify(field)} = ${JSON.stringify(value)}`);
    }
    readings.push({ topic: field.slice(0, cut), partition, frontier, highest, sinceMs });
  }
  return readings;
}

/** What the previous run left. */
export async function loadReadings(state: ReadingsCalls): Promise<PreviousReading[]> {
  return decodeReadings(await state.readings(), state.readingsKey);
}

/** Leaves this run's readings for the next. */
export async function saveReadings(state: ReadingsCalls, readings: readonly PreviousReading[]): Promise<void> {
  if (readings.length === 0) return;
  await state.writeReadings(encodeReadings(readings));
}
