/**
 * The two registry wire formats a producer's serializer writes before the payload. Pure: no I/O.
 *
 * - Confluent: magic byte 0, the schema id as a 4-byte big-endian integer, then the payload; a Protobuf payload is
 *   preceded by the message indexes (which message of the schema file): a zigzag varint count then each index, the
 *   common `[0]` written as the single byte 0.
 * - AWS Glue Schema Registry: header version byte 3, a compression byte (0 none, 5 zlib), the schema version id as
 *   16 bytes (a UUID), then the payload (zlib-deflated when the compression byte says so).
 */

/** Where a framed payload's schema is found. */
export type SchemaRef = { readonly registry: 'confluent'; readonly id: number } | { readonly registry: 'glue'; readonly versionId: string };

/** A framed key or value: the schema it names, and the bytes after the frame. */
export interface Frame {
  readonly schema: SchemaRef;
  /** Glue's compression byte said zlib: `payload` is still deflated. */
  readonly zlib: boolean;
  readonly payload: Buffer;
}

export const CONFLUENT_MAGIC = 0;
export const GLUE_HEADER_VERSION = 3;
const GLUE_COMPRESSION_NONE = 0;
const GLUE_COMPRESSION_ZLIB = 5;
const CONFLUENT_HEADER = 5;
const GLUE_HEADER = 18;

/** Bytes that do not carry a registry frame: what was expected and what came, for the dead-letter reason. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

/** A byte as a reader recognises it: `0x7b ('{')`. */
function byteText(byte: number): string {
  const printable = byte >= 0x20 && byte < 0x7f ? ` ('${String.fromCharCode(byte)}')` : '';
  return `0x${byte.toString(16).padStart(2, '0')}${printable}`;
}

/**
 * Reads the frame of a registry-serialized key or value.
 *
 * @throws FrameError naming the byte expected (0 for Confluent, 3 for Glue) and the byte found.
 * @example
 * readFrame(Buffer.from([0, 0, 0, 0, 7, 2, 0x61])); // { schema: { registry: 'confluent', id: 7 }, zlib: false, payload: <02 61> }
 */
export function readFrame(bytes: Buffer): Frame {
  if (bytes.length === 0) throw new FrameError('expected a registry frame (magic byte 0 for Confluent, header version 3 for Glue), got 0 bytes');
  const first = bytes[0]!;
  if (first === CONFLUENT_MAGIC) {
    if (bytes.length < CONFLUENT_HEADER) throw new FrameError(`expected a 5-byte Confluent header (magic byte 0, 4-byte schema id), got ${bytes.length} bytes`);
    return { schema: { registry: 'confluent', id: bytes.readInt32BE(1) }, zlib: false, payload: bytes.subarray(CONFLUENT_HEADER) };
  }
  if (first === GLUE_HEADER_VERSION) {
    if (bytes.length < GLUE_HEADER) throw new FrameError(`expected an 18-byte Glue header (version 3, compression, 16-byte schema version id), got ${bytes.length} bytes`);
    const compression = bytes[1]!;
    if (compression !== GLUE_COMPRESSION_NONE && compression !== GLUE_COMPRESSION_ZLIB) {
      throw new FrameError(`expected Glue compression byte 0 (none) or 5 (zlib), got ${compression}`);
    }
    return { schema: { registry: 'glue', versionId: uuidText(bytes.subarray(2, GLUE_HEADER)) }, zlib: compression === GLUE_COMPRESSION_ZLIB, payload: bytes.subarray(GLUE_HEADER) };
  }
  const hint = first === 0x7b || first === 0x5b || first === 0x22 ? ' (the bytes look like JSON text: a producer without the registry serializer?)' : '';
  throw new FrameError(`expected magic byte 0 (Confluent wire format) or header version 3 (Glue), got ${byteText(first)}${hint}`);
}

/**
 * The Confluent frame of `payload` written with schema `id` (and, for Protobuf, `messageIndexes`).
 *
 * @example
 * confluentFrame(7, Buffer.from([2, 0x61])); // <00 00 00 00 07 02 61>
 */
export function confluentFrame(id: number, payload: Buffer, messageIndexes?: readonly number[]): Buffer {
  const header = Buffer.alloc(CONFLUENT_HEADER);
  header.writeUInt8(CONFLUENT_MAGIC, 0);
  header.writeInt32BE(id, 1);
  return Buffer.concat(messageIndexes === undefined ? [header, payload] : [header, writeMessageIndexes(messageIndexes), payload]);
}

/**
 * The Glue frame of `payload` (already deflated when `zlib`) for schema version `versionId`, as Glue's serializer
 * writes it.
 *
 * @example
 * glueFrame('b7b4a7f0-5f1e-4c1f-8e0b-6a2f0c7d9e11', payload, false);
 */
export function glueFrame(versionId: string, payload: Buffer, zlib: boolean): Buffer {
  const id = Buffer.from(versionId.replace(/-/g, ''), 'hex');
  if (id.length !== 16) throw new RangeError(`expected a schema version id of 16 bytes (a UUID), got ${JSON.stringify(versionId)}`);
  return Buffer.concat([Buffer.from([GLUE_HEADER_VERSION, zlib ? GLUE_COMPRESSION_ZLIB : GLUE_COMPRESSION_NONE]), id, payload]);
}

function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What a Protobuf payload starts with: which message of the schema file, then where the message bytes begin. */
export interface MessageIndexes {
  /** The path to the message: index among the file's top-level messages, then among its nested ones. */
  readonly indexes: readonly number[];
  readonly payload: Buffer;
}

/** At most this many indexes: deeper nesting is a corrupt payload, not a schema. */
const MAX_INDEXES = 64;

/**
 * Reads the message indexes Confluent's Protobuf serializer writes after the schema id.
 *
 * @throws FrameError when the varints are cut short or implausible.
 * @example
 * readMessageIndexes(Buffer.from([0, 0x0a, 0x01])); // { indexes: [0], payload: <0a 01> }
 */
export function readMessageIndexes(bytes: Buffer): MessageIndexes {
  let at = 0;
  const next = (): number => {
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (at >= bytes.length) throw new FrameError('expected Protobuf message indexes after the schema id, got the end of the bytes');
      const byte = bytes[at++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
    }
    throw new FrameError('expected Protobuf message indexes (zigzag varints), got a varint longer than 5 bytes');
  };
  const count = next();
  // The common case, the first message of the file, is the single count 0.
  if (count === 0) return { indexes: [0], payload: bytes.subarray(at) };
  if (count < 0 || count > MAX_INDEXES) throw new FrameError(`expected a Protobuf message index count of 1 to ${MAX_INDEXES}, got ${count}`);
  const indexes: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const index = next();
    if (index < 0) throw new FrameError(`expected non-negative Protobuf message indexes, got ${index}`);
    indexes.push(index);
  }
  return { indexes, payload: bytes.subarray(at) };
}

/**
 * The message index Glue's Protobuf serializer writes before the message: one unsigned varint (a uint32), the
 * position of the message's type among all the file's message types, nested ones too, sorted by full name.
 *
 * @throws FrameError when the varint is cut short or longer than a uint32's 5 bytes.
 * @example
 * readGlueMessageIndex(Buffer.from([2, 0x0a, 0x01])); // { index: 2, payload: <0a 01> }
 */
export function readGlueMessageIndex(bytes: Buffer): { readonly index: number; readonly payload: Buffer } {
  let index = 0;
  for (let at = 0; at < 5; at += 1) {
    if (at >= bytes.length) throw new FrameError("expected Glue's Protobuf message index (a varint) after the header, got the end of the bytes");
    const byte = bytes[at]!;
    index += (byte & 0x7f) * 2 ** (7 * at);
    if ((byte & 0x80) === 0) {
      if (index > 0xffffffff) break;
      return { index, payload: bytes.subarray(at + 1) };
    }
  }
  throw new FrameError("expected Glue's Protobuf message index (a uint32 varint), got more than 32 bits");
}

/** The message indexes as Confluent's serializer writes them (`[0]` as the single byte 0). */
export function writeMessageIndexes(indexes: readonly number[]): Buffer {
  if (indexes.length === 1 && indexes[0] === 0) return Buffer.from([0]);
  const out: number[] = [];
  for (const value of [indexes.length, ...indexes]) {
    let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
    while (zigzag >= 0x80) {
      out.push((zigzag & 0x7f) | 0x80);
      zigzag = Math.floor(zigzag / 128);
    }
    out.push(zigzag);
  }
  return Buffer.from(out);
}
