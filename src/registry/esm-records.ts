/**
 * What an event source mapping with a schema registry (provisioned mode, `SchemaRegistryConfig`) delivers, made into
 * what the rest of kafka-lanes reads. Pure: no I/O. The mapping validates the key and/or value it is told to, marks
 * each with `keySchemaMetadata` / `valueSchemaMetadata` (`{ dataFormat, schemaId }`), and delivers it either
 * - `SOURCE`: the payload with the registry's frame removed (Confluent's magic byte and schema id, Glue's header;
 *   a Confluent Protobuf payload keeps its message indexes). The frame is put back from the schema id, so the record
 *   reads, parks, retries and dead-letters as the producer wrote it, and `dlq replay` writes back what its topic's
 *   other readers expect; or
 * - `JSON`: the value decoded to JSON text. Those bytes cannot become the producer's again: the record is marked with
 *   the `lanes-esm-decoded` header naming the parts, which `avro()`, `protobuf()` and `jsonSchema()` then parse as
 *   JSON, on the retry path too (copies keep the header).
 * Either way the metadata is dropped once applied, so a record read again (a parked one) is left as it is.
 */
import type { AwsKafkaHeader } from '../event/types';
import { ESM_DECODED_HEADER } from './types';
import { confluentFrame, glueFrame } from './wire-format';

/** What an event source mapping with a schema registry delivers: the source bytes less their frame, or JSON text. */
export type EventRecordFormat = 'SOURCE' | 'JSON';


const PARTS = ['key', 'value'] as const;
type Part = (typeof PARTS)[number];
const METADATA: Record<Part, 'keySchemaMetadata' | 'valueSchemaMetadata'> = { key: 'keySchemaMetadata', value: 'valueSchemaMetadata' };

const CONFLUENT_ID = /^[0-9]{1,10}$/;
const GLUE_VERSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The registry frame a `SOURCE` payload had, from the schema id its metadata names; `undefined` for an id of neither form. */
function framed(payload: Buffer, schemaId: unknown): Buffer | undefined {
  if (typeof schemaId !== 'string') return undefined;
  // Confluent ids are positive int32s; Glue's are schema version UUIDs. Glue's zlib compression is not known here:
  // the frame says "no compression", which is what the payload is once the mapping has read it.
  if (CONFLUENT_ID.test(schemaId) && Number(schemaId) <= 0x7fffffff) return confluentFrame(Number(schemaId), payload);
  if (GLUE_VERSION_ID.test(schemaId)) return glueFrame(schemaId, payload, false);
  return undefined;
}

function hasMetadata(raw: Readonly<Record<string, unknown>>): boolean {
  return (raw['keySchemaMetadata'] !== undefined && raw['keySchemaMetadata'] !== null) || (raw['valueSchemaMetadata'] !== undefined && raw['valueSchemaMetadata'] !== null);
}

/**
 * The record JSON as kafka-lanes reads it, given what the trigger's schema registry integration delivers: the same
 * object when there is nothing to do (no integration, no schema metadata), else a new one.
 *
 * A `SOURCE` part whose schema id is of neither registry's form is left as delivered, metadata included: its
 * deserializer then dead-letters it, naming what came.
 *
 * @example
 * asProducerWrote({ ..., value: 'AgRhYg==', valueSchemaMetadata: { dataFormat: 'AVRO', schemaId: '7' } }, 'SOURCE');
 * // { ..., value: 'AAAAAAcCBGFi' } (magic byte 0, schema id 7, then the payload)
 */
export function asProducerWrote<T extends Readonly<Record<string, unknown>>>(raw: T, format: EventRecordFormat | undefined): T {
  if (format === undefined || !hasMetadata(raw)) return raw;
  const result: Record<string, unknown> = { ...raw };
  const decoded: Part[] = [];
  for (const part of PARTS) {
    const metadata = raw[METADATA[part]] as { schemaId?: unknown } | undefined | null;
    if (metadata === undefined || metadata === null) continue;
    const text = raw[part];
    if (format === 'JSON') {
      decoded.push(part);
    } else if (typeof text === 'string') {
      const restored = framed(Buffer.from(text, 'base64'), metadata.schemaId);
      if (restored === undefined) continue;
      result[part] = restored.toString('base64');
    }
    delete result[METADATA[part]];
  }
  if (decoded.length > 0) {
    const headers = Array.isArray(raw['headers']) ? (raw['headers'] as AwsKafkaHeader[]) : [];
    // Signed bytes, as AWS sends header values; the text is ASCII.
    result['headers'] = [...headers, { [ESM_DECODED_HEADER]: [...Buffer.from(decoded.join(','))] }];
  }
  return result as T;
}
