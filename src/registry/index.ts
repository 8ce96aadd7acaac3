/**
 * Keys and values from a schema registry: `avro()`, `protobuf()`, `jsonSchema()`. This module is small and loads no
 * codec: the reader (avsc, protobufjs, the registry client) is an `import()` at the first record that needs it, so
 * a handler that declares no registry format loads nothing of it (docs/schema-registry.md).
 */
import type { KafkaRecord } from '../event';
import { ConfigError } from '../errors';
import type { RegistryReader } from './reader';
import { isEsmDecoded, REGISTRY_FORMAT, REGISTRY_SUBJECT, type RegistryDeserializer, type RegistryFormatOptions, type SchemaFormat } from './types';

export { isRegistryDeserializer, REGISTRY_FORMAT, type ConfluentRegistryConfig, type GlueSchemaSource, type RegistryDeserializer, type RegistryFormatOptions, type SchemaFormat } from './types';

const FORMAT_NAMES: Record<SchemaFormat, string> = { avro: 'avro', protobuf: 'protobuf', json: 'jsonSchema' };
const KNOWN_OPTIONS = new Set(['registry', 'glue', 'subject', 'schema', 'messageType']);

function checkOptions(format: SchemaFormat, options: RegistryFormatOptions): void {
  const name = FORMAT_NAMES[format];
  if (typeof options !== 'object' || options === null) throw new ConfigError(`Expected the options of \`${name}()\` to be an object, got ${String(options)}`);
  const unknown = Object.keys(options).filter((key) => !KNOWN_OPTIONS.has(key));
  if (unknown.length > 0) throw new ConfigError(`Unknown option(s) of \`${name}()\`: ${unknown.join(', ')} (expected ${[...KNOWN_OPTIONS].join(', ')})`);
  if (options.registry === undefined && options.glue === undefined) {
    throw new ConfigError(`Expected \`${name}()\` to name a registry: \`registry\` (a Confluent-compatible URL) or \`glue\`, got neither`);
  }
  const url = typeof options.registry === 'string' ? options.registry : options.registry?.url;
  if (options.registry !== undefined && (typeof url !== 'string' || !/^https?:\/\/[^/]/.test(url))) {
    throw new ConfigError(`Expected \`${name}({ registry })\` to be an http(s) URL or { url, username?, password?, timeoutMs? }, got ${JSON.stringify(url ?? options.registry)}`);
  }
  const timeoutMs = typeof options.registry === 'object' ? options.registry.timeoutMs : undefined;
  if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0)) {
    throw new ConfigError(`Expected \`${name}({ registry: { timeoutMs } })\` to be a positive integer, got ${String(timeoutMs)}`);
  }
  if (options.glue !== undefined && options.glue !== true && typeof options.glue !== 'function' && (typeof options.glue !== 'object' || options.glue === null)) {
    throw new ConfigError(`Expected \`${name}({ glue })\` to be true, { region } or a schema source function, got ${String(options.glue)}`);
  }
}

function registryFormat<T>(format: SchemaFormat, options: RegistryFormatOptions): RegistryDeserializer<T> {
  checkOptions(format, options);
  let reader: Promise<RegistryReader> | undefined;
  const readerOf = (): Promise<RegistryReader> => {
    reader ??= import('./reader').then(({ RegistryReader }) => new RegistryReader(format, options));
    return reader;
  };
  const read = async (bytes: Buffer | null, record: KafkaRecord, part?: 'key' | 'value'): Promise<T | null> => {
    // A tombstone (or an absent key) has no frame: it stays null, as with every deserializer.
    if (bytes === null) return null;
    // The trigger validated it through the registry and delivered it as JSON text (`eventRecordFormat: JSON`).
    if (part !== undefined && isEsmDecoded(record.headers, part)) return parseEsmJson(bytes, part) as T;
    return (await readerOf()).decode(bytes) as Promise<T>;
  };
  return Object.assign(read, {
    [REGISTRY_FORMAT]: format,
    [REGISTRY_SUBJECT]: options.registry !== undefined && options.schema !== undefined ? options.subject : undefined,
    encode: async (value: T): Promise<Buffer> => (await readerOf()).encode(value),
  });
}

// fatal: invalid UTF-8 is an error, not U+FFFD, as for every JSON this framework reads.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The JSON text an event source mapping decoded a key or value to; throws saying what came instead. */
function parseEsmJson(bytes: Buffer, part: 'key' | 'value'): unknown {
  try {
    return JSON.parse(utf8.decode(bytes)) as unknown;
  } catch (error) {
    throw new SyntaxError(`expected the JSON text the trigger's schema registry integration decoded the ${part} to (eventRecordFormat JSON), got ${bytes.length} bytes that are not: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * An Avro key or value from a schema registry: Confluent's wire format (magic byte 0, schema id) through a
 * Confluent-compatible registry, or Glue's (header version 3, schema version id). The schema of each id is fetched
 * once and kept. A record that does not decode is dead-lettered with the reason; a registry that does not answer
 * sends the record back to the event source, to run again later.
 *
 * @example
 * export const handler = lanes({ group: 'orders', value: avro<Order>({ registry: process.env.SCHEMA_REGISTRY_URL! }) }, async (record) => {
 *   await save(record.value);
 * });
 */
export function avro<T = unknown>(options: RegistryFormatOptions): RegistryDeserializer<T> {
  return registryFormat<T>('avro', options);
}

/**
 * A Protobuf key or value from a Confluent-compatible registry (the message named by the message indexes after the
 * schema id), decoded to a plain object: enums as names, 64-bit integers as strings, absent fields as defaults.
 *
 * @example
 * lanes({ group: 'payments', value: protobuf<Payment>({ registry: 'http://127.0.0.1:8081' }) }, handler);
 */
export function protobuf<T = unknown>(options: RegistryFormatOptions): RegistryDeserializer<T> {
  return registryFormat<T>('protobuf', options);
}

/**
 * A JSON Schema key or value from a registry: the frame is read and the schema id must exist; the JSON text is
 * parsed. Validate its shape with a Standard Schema: `value: { deserializer: jsonSchema(...), schema: z.object(...) }`.
 *
 * @example
 * lanes({ group: 'events', value: { deserializer: jsonSchema({ registry: url }), schema: Event } }, handler);
 */
export function jsonSchema<T = unknown>(options: RegistryFormatOptions): RegistryDeserializer<T> {
  return registryFormat<T>('json', options);
}
