/**
 * Reads and writes registry-framed bytes for one declared format: the frame, the schema (cached), the codec
 * (cached). Loaded at the first record of a handler that declares a registry format, never at cold start.
 */
import { inflateSync } from 'node:zlib';
import { SchemaRegistryUnavailableError } from './errors';
import { codecOf, CodecError, type Codec } from './codecs';
import { ConfluentRegistryClient, UnknownSchemaError } from './confluent-client';
import { confluentFrame, readFrame, readMessageIndexes, type SchemaRef } from './wire-format';
import type { ConfluentRegistryConfig, GlueSchemaSource, RegisteredSchema, RegistryFormatOptions, SchemaFormat } from './types';

/** One client per registry URL and credential in the process: every deserializer of it shares its schema cache. */
const clients = new Map<string, ConfluentRegistryClient>();

function clientOf(registry: string | ConfluentRegistryConfig): ConfluentRegistryClient {
  const config = typeof registry === 'string' ? { url: registry } : registry;
  const key = JSON.stringify([config.url, config.username, config.password, config.timeoutMs]);
  let client = clients.get(key);
  if (client === undefined) {
    client = new ConfluentRegistryClient(config);
    clients.set(key, client);
  }
  return client;
}

const GLUE_FORMATS: Record<string, SchemaFormat> = { AVRO: 'avro', PROTOBUF: 'protobuf', JSON: 'json' };

/** Glue's `GetSchemaVersion` through the service's own `@aws-sdk/client-glue`, loaded at the first Glue record. */
function sdkGlueSource(region: string | undefined): GlueSchemaSource {
  let client: Promise<{ send(command: unknown): Promise<{ DataFormat?: string; SchemaDefinition?: string }> ; command: (input: object) => unknown }> | undefined;
  return async (versionId) => {
    // A name in a variable: the SDK client is the service's dependency, not kafka-lanes', and bundlers leave it be.
    const name = '@aws-sdk/client-glue';
    client ??= (import(name) as Promise<{ GlueClient: new (c: object) => { send(command: unknown): Promise<never> }; GetSchemaVersionCommand: new (input: object) => unknown }>).then(
      (sdk) => {
        const glue = new sdk.GlueClient(region === undefined ? {} : { region });
        return { send: (command: unknown) => glue.send(command), command: (input: object) => new sdk.GetSchemaVersionCommand(input) };
      },
    );
    const glue = await client;
    try {
      const answer = await glue.send(glue.command({ SchemaVersionId: versionId }));
      return { dataFormat: answer.DataFormat ?? '', definition: answer.SchemaDefinition ?? '' };
    } catch (error) {
      if (error instanceof Error && error.name === 'EntityNotFoundException') throw new UnknownSchemaError(`Glue has no schema version ${versionId}: ${error.message}`);
      throw new SchemaRegistryUnavailableError(`Glue Schema Registry did not give schema version ${versionId}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
}

/** The Glue source the options name, or undefined. */
function glueSourceOf(glue: RegistryFormatOptions['glue']): GlueSchemaSource | undefined {
  if (glue === undefined) return undefined;
  if (typeof glue === 'function') return glue;
  return sdkGlueSource(glue === true ? undefined : glue.region);
}

export class RegistryReader {
  readonly #format: SchemaFormat;
  readonly #options: RegistryFormatOptions;
  readonly #confluent: ConfluentRegistryClient | undefined;
  readonly #glue: GlueSchemaSource | undefined;
  /** Codec per schema (id or Glue version), kept for the process's life; failed lookups are not kept. */
  readonly #codecs = new Map<string, Promise<Codec>>();
  #writer: Promise<{ id: number; codec: Codec }> | undefined;

  constructor(format: SchemaFormat, options: RegistryFormatOptions) {
    this.#format = format;
    this.#options = options;
    this.#confluent = options.registry === undefined ? undefined : clientOf(options.registry);
    this.#glue = glueSourceOf(options.glue);
  }

  /**
   * The value the framed `bytes` hold.
   *
   * @throws SchemaRegistryUnavailableError when the schema could not be fetched; any other error says why the
   * bytes cannot be read (the caller names the record and dead-letters it).
   */
  async decode(bytes: Buffer): Promise<unknown> {
    const frame = readFrame(bytes);
    const codec = await this.#codec(frame.schema);
    let payload = frame.payload;
    if (frame.zlib) {
      try {
        payload = inflateSync(payload);
      } catch (error) {
        throw new CodecError(`Glue's compression byte says zlib, but ${payload.length} bytes do not inflate: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    if (codec.format !== 'protobuf') return codec.decode(payload);
    if (frame.schema.registry === 'glue') throw new CodecError('Protobuf in Glue\'s wire format is not supported yet: use Avro or JSON Schema with Glue, or a Confluent-compatible registry');
    const { indexes, payload: message } = readMessageIndexes(payload);
    return codec.decode(message, indexes);
  }

  /** `value` in Confluent's wire format under the options' subject and schema. */
  async encode(value: unknown): Promise<Buffer> {
    this.#writer ??= this.#registerWriter();
    this.#writer.catch(() => (this.#writer = undefined));
    const { id, codec } = await this.#writer;
    const { payload, messageIndexes } = codec.encode(value, this.#options.messageType);
    return confluentFrame(id, payload, codec.format === 'protobuf' ? messageIndexes ?? [0] : undefined);
  }

  async #registerWriter(): Promise<{ id: number; codec: Codec }> {
    const { subject, schema } = this.#options;
    if (this.#confluent === undefined || subject === undefined || schema === undefined) {
      throw new CodecError('encode needs `registry`, `subject` and `schema` in the options of the format');
    }
    const definition = typeof schema === 'string' ? schema : JSON.stringify(schema);
    const codec = codecOf({ format: this.#format, definition, ref: `the schema of subject ${subject}` }, this.#format);
    const id = await this.#confluent.register(subject, this.#format, definition);
    return { id, codec };
  }

  #codec(ref: SchemaRef): Promise<Codec> {
    const key = ref.registry === 'confluent' ? `c${ref.id}` : `g${ref.versionId}`;
    let codec = this.#codecs.get(key);
    if (codec === undefined) {
      codec = this.#schema(ref).then((schema) => codecOf(schema, this.#format));
      this.#codecs.set(key, codec);
      codec.catch(() => this.#codecs.get(key) === codec && this.#codecs.delete(key));
    }
    return codec;
  }

  async #schema(ref: SchemaRef): Promise<RegisteredSchema> {
    if (ref.registry === 'confluent') {
      if (this.#confluent === undefined) throw new CodecError(`expected Glue's wire format (no Confluent-compatible \`registry\` is configured), got Confluent's (schema id ${ref.id})`);
      return this.#confluent.schemaById(ref.id);
    }
    if (this.#glue === undefined) throw new CodecError(`expected Confluent's wire format (\`glue\` is not configured), got Glue's (schema version ${ref.versionId})`);
    let answer: Awaited<ReturnType<GlueSchemaSource>>;
    try {
      answer = await this.#glue(ref.versionId);
    } catch (error) {
      if (error instanceof UnknownSchemaError || error instanceof SchemaRegistryUnavailableError) throw error;
      throw new SchemaRegistryUnavailableError(`the Glue schema source did not give schema version ${ref.versionId}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    if (answer === undefined) throw new UnknownSchemaError(`the Glue schema source has no schema version ${ref.versionId}`);
    const format = GLUE_FORMATS[answer.dataFormat];
    if (format === undefined) throw new CodecError(`Glue schema version ${ref.versionId} has data format ${JSON.stringify(answer.dataFormat)}, not AVRO, PROTOBUF or JSON`);
    return { format, definition: answer.definition, ref: `Glue schema version ${ref.versionId}` };
  }
}
