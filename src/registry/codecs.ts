/**
 * A registered schema made into a codec: avsc for Avro, protobufjs for Protobuf, JSON text for JSON Schema
 * (docs/schema-registry.md, "Libraries", says why these). Loaded only by handlers that read a registry format.
 */
import * as avro from 'avsc';
import * as protobuf from 'protobufjs';
import type { RegisteredSchema, SchemaFormat } from './types';

/** A payload does not decode with its schema, or a value does not encode with it: the reason says which and why. */
export class CodecError extends Error {
  override readonly name = 'CodecError';
}

export interface Codec {
  readonly format: SchemaFormat;
  /** The payload after the frame (and, for Protobuf, after the message indexes) as a plain value. */
  decode(payload: Buffer, messageIndexes?: readonly number[]): unknown;
  /** The payload of `value`, and for Protobuf the message indexes to frame it with. */
  encode(value: unknown, messageType?: string): { readonly payload: Buffer; readonly messageIndexes?: readonly number[] };
}

// fatal: invalid UTF-8 in a JSON payload is an error, not U+FFFD (as the 'json' deserializer reads it).
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The message of anything a library threw, never throwing itself. */
function why(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function avroCodec(schema: RegisteredSchema): Codec {
  let type: avro.Type;
  try {
    type = avro.Type.forSchema(JSON.parse(schema.definition) as avro.Schema);
  } catch (error) {
    throw new CodecError(`${schema.ref} is not an Avro schema avsc can read: ${why(error)}`);
  }
  return {
    format: 'avro',
    decode(payload) {
      try {
        // fromBuffer refuses trailing bytes too: a payload of another schema rarely decodes to the end exactly.
        return type.fromBuffer(payload);
      } catch (error) {
        throw new CodecError(`${payload.length} bytes do not decode with Avro ${schema.ref} (${type.name ?? type.typeName}): ${why(error)}`);
      }
    },
    encode(value) {
      const paths: string[] = [];
      if (!type.isValid(value, { errorHook: (path) => paths.push(path.join('.') || '(the value)') })) {
        throw new CodecError(`the value does not match Avro ${schema.ref} (${type.name ?? type.typeName}) at ${paths.slice(0, 5).join(', ')}`);
      }
      return { payload: type.toBuffer(value) };
    },
  };
}

/** The messages of a `.proto` file in declaration order, the way Confluent's message indexes count them. */
function messagesOf(container: protobuf.NamespaceBase): protobuf.Type[] {
  return container.nestedArray.filter((nested): nested is protobuf.Type => nested instanceof protobuf.Type);
}

/** The top-level messages of a `.proto` file (its package's, when it names one), in declaration order. */
function topMessagesOf(schema: RegisteredSchema): protobuf.Type[] {
  let top: protobuf.Type[];
  try {
    const parsed = protobuf.parse(schema.definition, { keepCase: true });
    parsed.root.resolveAll();
    const container = parsed.package === undefined ? parsed.root : parsed.root.lookup(parsed.package);
    top = container instanceof protobuf.Namespace || container instanceof protobuf.Root ? messagesOf(container) : [];
  } catch (error) {
    throw new CodecError(`${schema.ref} is not a .proto file protobufjs can read: ${why(error)}`);
  }
  if (top.length === 0) throw new CodecError(`${schema.ref} declares no message`);
  return top;
}

/** The message Confluent's message indexes point at (`[0]`: the first top-level message). */
function messageAt(top: protobuf.Type[], indexes: readonly number[], ref: string): protobuf.Type {
  let level = top;
  let found: protobuf.Type | undefined;
  for (const index of indexes) {
    found = level[index];
    if (found === undefined) throw new CodecError(`Protobuf ${ref} has no message at indexes [${indexes.join(', ')}]`);
    level = messagesOf(found);
  }
  return found ?? top[0]!;
}

/** The message indexes Confluent's wire format gives `type`. */
function indexesOf(top: protobuf.Type[], type: protobuf.Type): number[] {
  const path: number[] = [];
  for (let at: protobuf.NamespaceBase | null = type; at instanceof protobuf.Type; at = at.parent) {
    const siblings = at.parent instanceof protobuf.Type ? messagesOf(at.parent) : top;
    path.unshift(siblings.indexOf(at));
  }
  return path;
}

/** The message `encode` writes: the named one, or the file's first. */
function writerType(top: protobuf.Type[], messageType: string | undefined, ref: string): protobuf.Type {
  if (messageType === undefined) return top[0]!;
  try {
    return top[0]!.root.lookupType(messageType);
  } catch {
    throw new CodecError(`Protobuf ${ref} has no message ${messageType}`);
  }
}

function protobufCodec(schema: RegisteredSchema): Codec {
  const top = topMessagesOf(schema);
  return {
    format: 'protobuf',
    decode(payload, messageIndexes = [0]) {
      const type = messageAt(top, messageIndexes, schema.ref);
      try {
        return type.toObject(type.decode(payload), { longs: String, enums: String, defaults: true });
      } catch (error) {
        throw new CodecError(`${payload.length} bytes do not decode as Protobuf message ${type.fullName.replace(/^\./, '')} of ${schema.ref}: ${why(error)}`);
      }
    },
    encode(value, messageType) {
      const type = writerType(top, messageType, schema.ref);
      const name = type.fullName.replace(/^\./, '');
      // Converted first, then checked: the plain shape `decode` gives (64-bit integers as strings, enums as names)
      // encodes back.
      let message: protobuf.Message;
      try {
        message = type.fromObject(value as Record<string, unknown>);
      } catch (error) {
        throw new CodecError(`the value does not match Protobuf message ${name} of ${schema.ref}: ${why(error)}`);
      }
      const problem = type.verify(message);
      if (problem !== null) throw new CodecError(`the value does not match Protobuf message ${name} of ${schema.ref}: ${problem}`);
      return { payload: Buffer.from(type.encode(message).finish()), messageIndexes: indexesOf(top, type) };
    },
  };
}

function jsonCodec(schema: RegisteredSchema): Codec {
  return {
    format: 'json',
    decode(payload) {
      try {
        return JSON.parse(utf8.decode(payload)) as unknown;
      } catch (error) {
        throw new CodecError(`${payload.length} bytes are not the JSON text ${schema.ref} describes: ${why(error)}`);
      }
    },
    encode(value) {
      return { payload: Buffer.from(JSON.stringify(value)) };
    },
  };
}

const MAKERS: Record<SchemaFormat, (schema: RegisteredSchema) => Codec> = { avro: avroCodec, protobuf: protobufCodec, json: jsonCodec };

/**
 * The codec of a registered schema, for a key or value declared as `expected`.
 *
 * @throws CodecError when the schema is of another format, or its text does not parse.
 */
export function codecOf(schema: RegisteredSchema, expected: SchemaFormat): Codec {
  if (schema.format !== expected) throw new CodecError(`expected the ${expected} format, but ${schema.ref} is ${schema.format}`);
  return MAKERS[expected](schema);
}
