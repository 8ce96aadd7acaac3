import { CompressionTypes, Kafka, logLevel, type Message } from 'kafkajs';
import { kafkaClientConfig } from '../connections';
import { ConfigError } from '../errors';
import type { KafkaOptions } from '../options/lanes-options';
import { avro, jsonSchema, protobuf, type ConfluentRegistryConfig, type RegistryFormatOptions } from '../registry';

/**
 * `kafka-lanes produce`: records from the command line, a file or stdin, written with acks=all. Parsing is pure
 * (`parseProduceRecords`); `produceRecords` writes what it parsed through the framework's connection options
 * (brokers or an MSK cluster ARN, TLS, SASL including MSK IAM), so any function or tool that has them can reuse it.
 */

/** One record to produce, as parsed: its key and headers as text, its value as the bytes to write. */
export interface ProduceRecord {
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly partition?: number;
  /** The value as parsed JSON (formats `json` and `records`): what a schema registry format encodes. */
  readonly parsed?: unknown;
}

/** How records are read. */
export interface ProduceInput {
  /** Values given as arguments, one record each. */
  readonly values?: readonly string[];
  /** The text of a file or stdin: one record per non-empty line. */
  readonly lines?: string;
  /** Where `lines` came from, for messages (`orders.jsonl`, `stdin`). */
  readonly source?: string;
  /**
   * `json` (default): each value must be JSON and is written compactly; `raw`: each value is written as its UTF-8
   * text; `records`: each line or argument is `{"key", "value", "headers", "partition"}`, its `value` written as JSON
   * (a string value as its text).
   */
  readonly format?: 'json' | 'raw' | 'records';
  /** The key of every record that does not carry its own. */
  readonly key?: string;
  /** Split each line at the first occurrence into key and value (kafka-console-producer's `key.separator`). */
  readonly keySeparator?: string;
  /** `name=value` headers added to every record. */
  readonly headers?: readonly string[];
  readonly partition?: number;
}

/** Where one produced record landed. */
export interface ProducedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
}

/**
 * Turns arguments or lines into records; every problem names the line or argument it is in.
 *
 * @throws ConfigError when a value is not JSON (format `json`), a record is not an object (format `records`), a
 * header is not `name=value`, or there is no record at all.
 * @example
 * parseProduceRecords({ values: ['{"orderId":"o-1"}'], key: 'c-1', headers: ['trace=abc'] });
 * // [{ key: 'c-1', value: Buffer('{"orderId":"o-1"}'), headers: { trace: 'abc' } }]
 * parseProduceRecords({ lines: 'c-1:{"orderId":"o-1"}\nc-2:{"orderId":"o-2"}', keySeparator: ':' });
 * // two records, keys c-1 and c-2
 */
export function parseProduceRecords(input: ProduceInput): ProduceRecord[] {
  const format = input.format ?? 'json';
  const common = parseHeaders(input.headers ?? []);
  const entries: Array<{ text: string; where: string }> = [
    ...(input.values ?? []).map((text, index) => ({ text, where: `argument ${index + 1}` })),
    ...(input.lines ?? '')
      .split(/\r?\n/)
      .map((text, index) => ({ text, where: `${input.source ?? 'input'} line ${index + 1}` }))
      .filter((entry) => entry.text.trim() !== ''),
  ];
  if (entries.length === 0) throw new ConfigError('Expected at least one record (a value argument, `--file <path>` or `--file -` for stdin), got none');
  return entries.map(({ text, where }) => {
    let key = input.key ?? null;
    let valueText = text;
    if (input.keySeparator !== undefined && format !== 'records') {
      const cut = text.indexOf(input.keySeparator);
      if (cut < 0) throw new ConfigError(`Expected \`<key>${input.keySeparator}<value>\` in ${where} (--key-separator), got \`${shorten(text)}\``);
      key = text.slice(0, cut);
      valueText = text.slice(cut + input.keySeparator.length);
    }
    const base = { ...(input.partition === undefined ? {} : { partition: input.partition }) };
    if (format === 'raw') return { ...base, key, value: Buffer.from(valueText, 'utf8'), headers: common };
    const parsed = parseJson(valueText, where);
    if (format === 'json') return { ...base, key, value: Buffer.from(JSON.stringify(parsed), 'utf8'), headers: common, parsed };
    return { ...base, ...recordOf(parsed, where, key), headers: { ...common, ...recordHeaders(parsed, where) } };
  });
}

/**
 * Writes `records` to `topic` with acks=all (every in-sync replica) through an idempotent producer made from the
 * framework's connection options; resolves once all are acknowledged, in order.
 *
 * @param fallbackBrokers The brokers used when `kafka` names none (the CLI: the local broker).
 * @example
 * const options = resolveOptions({ group: 'orders-svc' });
 * await produceRecords(options.kafka, 'orders', parseProduceRecords({ values: ['{"orderId":"o-1"}'], key: 'c-1' }));
 */
export async function produceRecords(kafka: KafkaOptions, topic: string, records: readonly ProduceRecord[], fallbackBrokers: readonly string[] = []): Promise<ProducedRecord[]> {
  const client = new Kafka({ ...(await kafkaClientConfig(kafka, fallbackBrokers)), logLevel: logLevel.NOTHING, connectionTimeout: 5_000 });
  const producer = client.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const produced: ProducedRecord[] = [];
    // One send per record keeps the order of the input and tells where each record went.
    for (const record of records) {
      const message: Message = {
        key: record.key,
        value: record.value,
        headers: { ...record.headers },
        ...(record.partition === undefined ? {} : { partition: record.partition }),
      };
      const [meta] = await producer.send({ topic, acks: -1, compression: CompressionTypes.None, messages: [message] });
      produced.push({ topic, partition: meta?.partition ?? -1, offset: meta?.baseOffset ?? '?', key: record.key });
    }
    return produced;
  } finally {
    await producer.disconnect();
  }
}

/** How `produce` writes values through a schema registry, as its serializer would. */
export interface RegistryWrite {
  readonly format: 'avro' | 'protobuf' | 'json-schema';
  /** A Confluent-compatible registry (Confluent, Apicurio's `ccompat`, Redpanda, Karapace). */
  readonly registry: string | ConfluentRegistryConfig;
  /** Where the schema is registered (found or added): `<topic>-value` by Confluent's default naming. */
  readonly subject: string;
  /** The schema text: Avro JSON, a `.proto` file or a JSON Schema. */
  readonly schema: string;
  /** Protobuf: the message to write (default the file's first). */
  readonly messageType?: string;
}

const REGISTRY_FORMATS = { avro, protobuf, 'json-schema': jsonSchema } as const;

/**
 * The records with their JSON values encoded in Confluent's wire format through the registry: the schema registered
 * under the subject at the first record (the registry's compatibility rules apply), then each value checked against
 * it and framed with its id. A null value (a tombstone) stays null.
 *
 * @throws ConfigError naming the record whose value the schema refuses; the registry's own errors as they are.
 * @example
 * await encodeThroughRegistry(parseProduceRecords({ values: ['{"id":1}'] }), { format: 'avro', registry: 'http://127.0.0.1:8081', subject: 'orders-value', schema });
 */
export async function encodeThroughRegistry(records: readonly ProduceRecord[], write: RegistryWrite): Promise<ProduceRecord[]> {
  const options: RegistryFormatOptions = { registry: write.registry, subject: write.subject, schema: write.schema, ...(write.messageType === undefined ? {} : { messageType: write.messageType }) };
  const codec = REGISTRY_FORMATS[write.format](options);
  const encoded: ProduceRecord[] = [];
  // In order, one at a time: the first registers the schema, the rest reuse its id.
  for (const [index, record] of records.entries()) {
    if (record.value === null) {
      encoded.push(record);
      continue;
    }
    if (record.parsed === undefined) throw new ConfigError(`Expected JSON values to encode as ${write.format} (not --raw), got record ${index + 1} as text`);
    let value: Buffer;
    try {
      value = await codec.encode(record.parsed);
    } catch (error) {
      if (error instanceof Error && error.name === 'CodecError') throw new ConfigError(`Record ${index + 1} cannot be written as ${write.format} under subject ${write.subject}: ${error.message}`);
      throw error;
    }
    encoded.push({ ...record, value });
  }
  return encoded;
}

function parseHeaders(headers: readonly string[]): Record<string, string> {
  const parsed: Record<string, string> = {};
  for (const header of headers) {
    const cut = header.indexOf('=');
    if (cut <= 0) throw new ConfigError(`Expected \`--header <name>=<value>\`, got \`${header}\``);
    parsed[header.slice(0, cut)] = header.slice(cut + 1);
  }
  return parsed;
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      `Expected JSON in ${where}, got \`${shorten(text)}\` (${error instanceof Error ? error.message : String(error)}); --raw writes the text as it is`,
    );
  }
}

function recordOf(parsed: unknown, where: string, defaultKey: string | null): { key: string | null; value: Buffer | null; partition?: number; parsed: unknown } {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !('value' in parsed)) {
    throw new ConfigError(`Expected a record like \`{"key":"c-1","value":{...},"headers":{"trace":"abc"}}\` in ${where}, got \`${shorten(JSON.stringify(parsed))}\``);
  }
  const record = parsed as { key?: unknown; value: unknown; partition?: unknown };
  if (record.key !== undefined && record.key !== null && typeof record.key !== 'string') {
    throw new ConfigError(`Expected \`key\` to be a string or null in ${where}, got \`${JSON.stringify(record.key)}\``);
  }
  if (record.partition !== undefined && !(Number.isSafeInteger(record.partition) && (record.partition as number) >= 0)) {
    throw new ConfigError(`Expected \`partition\` to be a non-negative integer in ${where}, got \`${JSON.stringify(record.partition)}\``);
  }
  const value = record.value === null ? null : Buffer.from(typeof record.value === 'string' ? record.value : JSON.stringify(record.value), 'utf8');
  return {
    key: record.key === undefined ? defaultKey : record.key,
    value,
    parsed: record.value,
    ...(record.partition === undefined ? {} : { partition: record.partition as number }),
  };
}

function recordHeaders(parsed: unknown, where: string): Record<string, string> {
  const headers = (parsed as { headers?: unknown }).headers;
  if (headers === undefined) return {};
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers) || Object.values(headers).some((v) => typeof v !== 'string')) {
    throw new ConfigError(`Expected \`headers\` to be an object of strings in ${where}, got \`${shorten(JSON.stringify(headers))}\``);
  }
  return headers as Record<string, string>;
}

function shorten(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
