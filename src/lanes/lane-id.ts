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
  if (options.ordering !== 'key') return laneIdOfKey(null, options);
  const key = options.keyOf === undefined ? record.key : options.keyOf(record);
  if (key === null || key === undefined) return laneIdOfKey(null, options);
  return laneIdOfKey((typeof key === 'string' ? Buffer.from(key, 'utf8') : key).toString('base64'), options);
}

/**
 * `laneIdOf` from the base64 of the key's bytes (what AWS sends when it is canonical), or `null` for a null key: the
 * lane id without decoding the key.
 *
 * @example
 * laneIdOfKey('Y3VzdG9tZXItNDI=', { ordering: 'key', nullKey: 'independent' }); // 'Y3VzdG9tZXItNDI='
 */
export function laneIdOfKey(base64: string | null, options: Pick<LanesOptions, 'ordering' | 'nullKey'>): string | undefined {
  if (options.ordering === 'unordered') return undefined;
  if (options.ordering === 'partition') return PARTITION_LANE;
  if (base64 === null) return options.nullKey === 'shared' ? NULL_KEY_LANE : undefined;
  if (base64.length <= MAX_LANE_ID) return base64;
  // node:crypto is loaded at the first long key, not at cold start, where importing it costs milliseconds.
  return `#${process.getBuiltinModule('node:crypto').createHash('sha256').update(base64).digest('base64url')}`;
}
