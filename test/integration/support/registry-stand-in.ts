/**
 * A STAND-IN for a schema registry, not a real one: no registry with a Confluent-compatible API could be assembled
 * on these machines. Apicurio Registry's app jar is served, but not all it depends on: 2.6.13.Final lacks
 * apicurio-registry-schema-util-provider 2.6.13.Final, apicurio-common-app-components-core and -auth 0.2.7.Final and
 * apicurio-tenant-manager-client 0.2.0.Final; of 3.3.3's 31 io.apicurio dependencies only apicurio-registry-common
 * resolves; 3.3.2's parent POM is not served. (Java 21 is not the obstacle: a Temurin 25 JDK is installed.)
 * Confluent's and Karapace's registries are not on the reachable package registries. It serves the subset of Confluent's REST API a serializer and a deserializer use, as strictly as the
 * real one on the points the framework depends on:
 *
 * - `POST /subjects/{subject}/versions` ({ schema, schemaType? }): the schema is parsed (avsc, protobufjs,
 *   JSON) and refused with 422 / error_code 42201 when it does not; the same schema text gets the same id in every
 *   subject (ids are global, as Confluent assigns them); ids start at 1 and only grow;
 * - `GET /schemas/ids/{id}`: { schema, schemaType } (schemaType left out for Avro, as Confluent does), 404 /
 *   error_code 40403 for an unknown id;
 * - `GET /subjects`, `GET /subjects/{subject}/versions/latest`;
 * - the content type `application/vnd.schemaregistry.v1+json`.
 *
 * Tests switch it off (`unavailable('refuse')`: the port closed; `unavailable('503')`: a 503 with error_code 50003)
 * and on again, to show what a record's fate is while a registry does not answer.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as avro from 'avsc';
import * as protobuf from 'protobufjs';

type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

interface Stored {
  readonly id: number;
  readonly schema: string;
  readonly schemaType: SchemaType;
}

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

function parses(schema: string, type: SchemaType): string | undefined {
  try {
    if (type === 'AVRO') avro.Type.forSchema(JSON.parse(schema) as avro.Schema);
    else if (type === 'PROTOBUF') protobuf.parse(schema).root.resolveAll();
    else JSON.parse(schema);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

export class RegistryStandIn {
  readonly #byId = new Map<number, Stored>();
  readonly #bySubject = new Map<string, number[]>();
  #server: Server | undefined;
  #port = 0;
  #mode: 'up' | '503' = 'up';
  /** Requests served, by path, for tests that check the schema cache. */
  readonly requests: string[] = [];

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async start(): Promise<this> {
    this.#server = createServer((request, response) => void this.#serve(request, response));
    await new Promise<void>((resolve) => this.#server!.listen(this.#port, '127.0.0.1', resolve));
    this.#port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The registry stops answering: its port closed (`refuse`) or every request answered 503 (`503`). */
  async unavailable(how: 'refuse' | '503'): Promise<void> {
    if (how === '503') this.#mode = '503';
    else await this.stop();
  }

  /** Answers again, on the same port and with the same schemas. */
  async available(): Promise<void> {
    this.#mode = 'up';
    if (this.#server === undefined) await this.start();
  }

  /** Registers `schema` under `subject` as a producer's serializer would; its id. */
  register(subject: string, schema: string, schemaType: SchemaType = 'AVRO'): number {
    const problem = parses(schema, schemaType);
    if (problem !== undefined) throw new Error(`invalid ${schemaType} schema: ${problem}`);
    const existing = [...this.#byId.values()].find((s) => s.schema === schema && s.schemaType === schemaType);
    const id = existing?.id ?? this.#byId.size + 1;
    if (existing === undefined) this.#byId.set(id, { id, schema, schemaType });
    const versions = this.#bySubject.get(subject) ?? [];
    if (!versions.includes(id)) versions.push(id);
    this.#bySubject.set(subject, versions);
    return id;
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = (request.url ?? '/').split('?')[0]!;
    this.requests.push(`${request.method} ${path}`);
    const send = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': CONTENT_TYPE });
      response.end(JSON.stringify(body));
    };
    if (this.#mode === '503') return send(503, { error_code: 50003, message: 'Error while forwarding the request to the primary (stand-in outage)' });
    let match = /^\/schemas\/ids\/(\d+)$/.exec(path);
    if (request.method === 'GET' && match !== null) {
      const stored = this.#byId.get(Number(match[1]));
      if (stored === undefined) return send(404, { error_code: 40403, message: 'Schema not found' });
      return send(200, stored.schemaType === 'AVRO' ? { schema: stored.schema } : { schema: stored.schema, schemaType: stored.schemaType });
    }
    match = /^\/subjects\/([^/]+)\/versions$/.exec(path);
    if (request.method === 'POST' && match !== null) {
      let body: { schema?: unknown; schemaType?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return send(400, { error_code: 400, message: 'Unrecognized request body' });
      }
      const schemaType = (body.schemaType ?? 'AVRO') as SchemaType;
      if (typeof body.schema !== 'string' || !['AVRO', 'PROTOBUF', 'JSON'].includes(schemaType)) return send(422, { error_code: 42201, message: 'Invalid schema' });
      try {
        return send(200, { id: this.register(decodeURIComponent(match[1]!), body.schema, schemaType) });
      } catch (error) {
        return send(422, { error_code: 42201, message: error instanceof Error ? error.message : String(error) });
      }
    }
    if (request.method === 'GET' && path === '/subjects') return send(200, [...this.#bySubject.keys()]);
    match = /^\/subjects\/([^/]+)\/versions\/latest$/.exec(path);
    if (request.method === 'GET' && match !== null) {
      const subject = decodeURIComponent(match[1]!);
      const versions = this.#bySubject.get(subject);
      if (versions === undefined) return send(404, { error_code: 40401, message: `Subject '${subject}' not found.` });
      const stored = this.#byId.get(versions.at(-1)!)!;
      return send(200, { subject, version: versions.length, id: stored.id, schema: stored.schema, ...(stored.schemaType === 'AVRO' ? {} : { schemaType: stored.schemaType }) });
    }
    return send(404, { error_code: 404, message: 'HTTP 404 Not Found' });
  }
}
