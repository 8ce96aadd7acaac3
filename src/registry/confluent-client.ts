/**
 * A client of the Confluent Schema Registry REST API (the subset a serializer needs: a schema by id, a subject's
 * registration), with the schema cache every serializer keeps: a schema id never changes meaning, so a schema
 * fetched once is kept for the life of the process. Concurrent first lookups of one id share one request.
 */
import { SchemaRegistryUnavailableError } from './errors';
import type { ConfluentRegistryConfig, RegisteredSchema, SchemaFormat } from './types';

export const DEFAULT_REGISTRY_TIMEOUT_MS = 5_000;

/** The registry answered, and has no such schema: the record's bytes name a schema that does not exist there. */
export class UnknownSchemaError extends Error {
  override readonly name = 'UnknownSchemaError';
}

/** The registry answered and refused a request (a 4xx other than 404, 401, 403, 408 and 429): not a passing outage. */
export class RegistryRefusedError extends Error {
  override readonly name = 'RegistryRefusedError';
}

interface SchemaAnswer {
  readonly schema?: unknown;
  readonly schemaType?: unknown;
  readonly id?: unknown;
}

function formatOf(schemaType: unknown): SchemaFormat {
  // The registry leaves out `schemaType` for Avro, its first and default type.
  if (schemaType === undefined || schemaType === null || schemaType === 'AVRO') return 'avro';
  if (schemaType === 'PROTOBUF') return 'protobuf';
  if (schemaType === 'JSON') return 'json';
  return String(schemaType) as SchemaFormat;
}

const REGISTRY_TYPE: Record<SchemaFormat, string> = { avro: 'AVRO', protobuf: 'PROTOBUF', json: 'JSON' };

export class ConfluentRegistryClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  /** Schema by id, kept for the process's life (ids are immutable). Failed lookups are not kept. */
  readonly #byId = new Map<number, Promise<RegisteredSchema>>();
  /** Schema id by subject and schema text, as registered (or found registered) by `register`. */
  readonly #registered = new Map<string, Promise<number>>();

  constructor(config: ConfluentRegistryConfig) {
    this.#base = config.url.replace(/\/+$/, '');
    this.#timeoutMs = config.timeoutMs ?? DEFAULT_REGISTRY_TIMEOUT_MS;
    this.#headers = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
    if (config.username !== undefined) {
      this.#headers['authorization'] = `Basic ${Buffer.from(`${config.username}:${config.password ?? ''}`).toString('base64')}`;
    }
  }

  /** The registry's URL, as shown in messages. */
  get url(): string {
    return this.#base;
  }

  /**
   * The schema registered under `id`.
   *
   * @throws UnknownSchemaError (the registry has no such id), SchemaRegistryUnavailableError (no answer in time).
   */
  schemaById(id: number): Promise<RegisteredSchema> {
    let found = this.#byId.get(id);
    if (found === undefined) {
      found = this.#request<SchemaAnswer>('GET', `/schemas/ids/${id}`).then((answer) => {
        if (typeof answer.schema !== 'string') throw new RegistryRefusedError(`the registry at ${this.#base} answered schema id ${id} without a schema`);
        return { format: formatOf(answer.schemaType), definition: answer.schema, ref: `schema id ${id}` };
      });
      this.#byId.set(id, found);
      found.catch(() => this.#byId.get(id) === found && this.#byId.delete(id));
    }
    return found;
  }

  /**
   * The id of `definition` under `subject`, registering it when the subject does not have it yet (what a
   * serializer with auto-registration does; the registry's compatibility rules may refuse it).
   */
  register(subject: string, format: SchemaFormat, definition: string): Promise<number> {
    const key = `${subject}\u0000${definition}`;
    let found = this.#registered.get(key);
    if (found === undefined) {
      const body = JSON.stringify(format === 'avro' ? { schema: definition } : { schema: definition, schemaType: REGISTRY_TYPE[format] });
      found = this.#request<SchemaAnswer>('POST', `/subjects/${encodeURIComponent(subject)}/versions`, body).then((answer) => {
        if (typeof answer.id !== 'number') throw new RegistryRefusedError(`the registry at ${this.#base} registered subject ${subject} without an id`);
        return answer.id;
      });
      this.#registered.set(key, found);
      found.catch(() => this.#registered.get(key) === found && this.#registered.delete(key));
    }
    return found;
  }

  async #request<T>(method: 'GET' | 'POST', path: string, body?: string): Promise<T> {
    const url = `${this.#base}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: body === undefined ? this.#headers : { ...this.#headers, 'content-type': 'application/vnd.schemaregistry.v1+json' },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      const why = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${this.#timeoutMs} ms` : (error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error));
      throw new SchemaRegistryUnavailableError(`the schema registry at ${this.#base} did not answer ${method} ${path}: ${why}`, { cause: error });
    }
    const text = await response.text().catch(() => '');
    if (response.ok) {
      try {
        return JSON.parse(text) as T;
      } catch (error) {
        throw new SchemaRegistryUnavailableError(`the schema registry at ${this.#base} answered ${method} ${path} with something other than JSON`, { cause: error });
      }
    }
    const detail = `${method} ${path}: HTTP ${response.status} ${text.slice(0, 200)}`.trim();
    if (response.status === 404) throw new UnknownSchemaError(`the schema registry at ${this.#base} has no ${path.startsWith('/schemas/ids/') ? `schema id ${path.slice('/schemas/ids/'.length)}` : 'such subject'} (${detail})`);
    // A server error, a throttle, a timeout and a refused credential pass (or are fixed by an operator): the record waits.
    if (response.status >= 500 || response.status === 401 || response.status === 403 || response.status === 408 || response.status === 429) {
      throw new SchemaRegistryUnavailableError(`the schema registry at ${this.#base} refused ${detail}`);
    }
    throw new RegistryRefusedError(`the schema registry at ${this.#base} refused ${detail}`);
  }
}
