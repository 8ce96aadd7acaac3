import type { KafkaRecord } from '../event';
import type { LanesOptions } from '../options';

/** The lane of `partition` mode: one per partition. */
export const PARTITION_LANE = '*';
/** The lane shared by records with a null key under `nullKey: 'shared'` (base64 never contains `~`). */
export const NULL_KEY_LANE = '~';
const MAX_LANE_ID = 128;

/**
 * The lane id of a record within its partition, or `undefined` for an independent record (unordered mode,
 * or a null key under `nullKey: 'independent'`). Lane ids are base64 of the key bytes, so any key (binary,
 * non-ASCII) fits a Redis key name; long keys are hashed to keep Redis keys short.
 *
 * @example
 * laneIdOf(record, { ordering: 'key', nullKey: 'independent' }); // 'Y3VzdG9tZXItNDI=' for key 'customer-42'
 */
export function laneIdOf(
  record: KafkaRecord,
  options: Pick<LanesOptions, 'ordering' | 'nullKey' | 'keyOf'>,
): string | undefined {
  if (options.ordering === 'unordered') return undefined;
  if (options.ordering === 'partition') return PARTITION_LANE;
  const key = options.keyOf === undefined ? record.key : options.keyOf(record);
  if (key === null || key === undefined) return options.nullKey === 'shared' ? NULL_KEY_LANE : undefined;
  const id = (typeof key === 'string' ? Buffer.from(key, 'utf8') : key).toString('base64');
  if (id.length <= MAX_LANE_ID) return id;
  // node:crypto is loaded at the first long key, not at cold start, where importing it costs milliseconds.
  return `#${process.getBuiltinModule('node:crypto').createHash('sha256').update(id).digest('base64url')}`;
}
