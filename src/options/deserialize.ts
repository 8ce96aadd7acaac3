import type { KafkaRecord } from '../event';
import type { Deserializer } from './lanes-options';
import { DeserializationError } from './errors';
import type { RecordPart } from './errors';

// fatal: invalid UTF-8 is an error, not U+FFFD; silently changed data is worse than a dead letter.
// A leading byte order mark is dropped (TextDecoder's default), which JSON.parse could not take.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Turns the bytes of a record's key or value into what the handler sees.
 * - `'json'`: JSON of the UTF-8 text; `null` bytes (absent key, tombstone) give `null`; empty bytes are not JSON.
 * - `'string'`: the UTF-8 text, or `null`.
 * - `'raw'`: the Buffer itself, or `null`.
 * - a function: called with the bytes and the record.
 * Invalid UTF-8 is an error for `'json'` and `'string'`; use `'raw'` for bytes that are not text.
 *
 * @param part Which part `bytes` are, for the error message.
 * @throws DeserializationError (not retriable, `cause` set) naming the part and `<topic>-<partition>@<offset>`.
 * @example
 * deserialize('json', record.value, record, 'value'); // { id: 1 }
 * deserialize('string', record.key, record, 'key'); // 'customer-1'
 */
export function deserialize(which: Deserializer, bytes: Buffer | null, record: KafkaRecord, part: RecordPart): unknown {
  if (typeof which === 'function') {
    try {
      return which(bytes, record);
    } catch (error) {
      throw new DeserializationError(part, record, `the ${part} deserializer threw: ${messageOf(error)}`, { cause: error });
    }
  }
  if (which === 'raw' || bytes === null) return bytes;

  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (error) {
    throw new DeserializationError(part, record, `${bytes.length} bytes are not valid UTF-8 (${which} deserializer)`, { cause: error });
  }
  if (which === 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new DeserializationError(part, record, `not JSON: ${messageOf(error)}`, { cause: error });
  }
}

/**
 * The record's key, deserialized.
 *
 * @example
 * deserializeKey(options.key, record); // 'customer-1' with the default `'string'`
 */
export function deserializeKey(which: Deserializer, record: KafkaRecord): unknown {
  return deserialize(which, record.key, record, 'key');
}

/**
 * The record's value, deserialized.
 *
 * @example
 * deserializeValue(options.value, record); // { id: 1 } with the default `'json'`
 */
export function deserializeValue(which: Deserializer, record: KafkaRecord): unknown {
  return deserialize(which, record.value, record, 'value');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
