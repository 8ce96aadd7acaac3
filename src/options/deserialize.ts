import { messageOf } from '../describe';
import type { KafkaRecord } from '../event';
import type { Deserializer, LanesOptions } from './lanes-options';
import { isRegistryDeserializer, type RegistryDeserializer } from '../registry/types';
import { SchemaRegistryUnavailableError } from '../registry/errors';
import { DeserializationError } from './errors';
import type { RecordPart } from './errors';
import { validatePart, type StandardSchemaV1 } from './standard-schema';

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

/** A record's key and value as the handler sees them. */
export interface RecordParts {
  readonly key: unknown;
  readonly value: unknown;
}

/**
 * A record's key and value, deserialized and validated against their schemas; a promise only when a schema
 * validates asynchronously, so the common case costs no extra turn of the event loop.
 *
 * @throws DeserializationError (or its `SchemaValidationError`) naming the part and the record.
 * @example
 * let parts = readRecordParts(options, record);
 * if (parts instanceof Promise) parts = await parts;
 */
export function readRecordParts(
  options: Pick<LanesOptions, 'key' | 'value' | 'keySchema' | 'valueSchema'>,
  record: KafkaRecord,
): RecordParts | Promise<RecordParts> {
  // The common case (no schema, no registry format): deserialized at once, with no object per part.
  if (options.keySchema === undefined && options.valueSchema === undefined && !isRegistryDeserializer(options.key) && !isRegistryDeserializer(options.value)) {
    return { key: deserialize(options.key, record.key, record, 'key'), value: deserialize(options.value, record.value, record, 'value') };
  }
  const key = readPart(options.key, options.keySchema, record, 'key');
  let value: ReturnType<typeof readPart>;
  try {
    value = readPart(options.value, options.valueSchema, record, 'value');
  } catch (error) {
    // The key's validation may still be running: its outcome no longer matters, but must not go unhandled.
    if (key.pending) key.result.catch(() => undefined);
    throw error;
  }
  if (!key.pending && !value.pending) return { key: key.result, value: value.result };
  // Both settle before either error is thrown: a rejection left behind would be unhandled.
  return Promise.allSettled([key.result, value.result]).then(([k, v]) => {
    if (k.status === 'rejected') throw k.reason;
    if (v.status === 'rejected') throw v.reason;
    return { key: k.value, value: v.value };
  });
}

type PartResult = { readonly pending: false; readonly result: unknown } | { readonly pending: true; readonly result: Promise<unknown> };

function readPart(which: Deserializer, schema: StandardSchemaV1 | undefined, record: KafkaRecord, part: RecordPart): PartResult {
  if (isRegistryDeserializer(which)) return { pending: true, result: readRegistryPart(which, schema, record, part) };
  const deserialized = deserialize(which, part === 'key' ? record.key : record.value, record, part);
  if (schema === undefined) return { pending: false, result: deserialized };
  const validated = validatePart(schema, deserialized, record, part);
  return validated instanceof Promise ? { pending: true, result: validated } : { pending: false, result: validated };
}

/**
 * A key or value of a registry format (`avro()`, `protobuf()`, `jsonSchema()`), then its Standard Schema if any.
 * Bytes that do not decode (a wrong magic byte, an unknown schema id, a payload its schema does not read) are a
 * DeserializationError: the record is dead-lettered with the reason. A registry that does not answer stays a
 * SchemaRegistryUnavailableError: the record goes back to the event source, never to the dead-letter topic.
 */
async function readRegistryPart(which: RegistryDeserializer<unknown>, schema: StandardSchemaV1 | undefined, record: KafkaRecord, part: RecordPart): Promise<unknown> {
  let decoded: unknown;
  try {
    decoded = await which(part === 'key' ? record.key : record.value, record, part);
  } catch (error) {
    if (error instanceof SchemaRegistryUnavailableError) throw error;
    throw new DeserializationError(part, record, messageOf(error), { cause: error });
  }
  return schema === undefined ? decoded : validatePart(schema, decoded, record, part);
}
