import type { StandardSchemaV1 } from '@standard-schema/spec';
import { thrownText } from '../describe';
import type { KafkaRecord } from '../event';
import type { Deserializer, DeserializerFn } from '../options/lanes-options';
import type { RegistryDeserializer } from '../registry/types';
import { DeserializationError, type RecordPart } from './errors';

export type { StandardSchemaV1 };

/**
 * How a record's key or value becomes what the handler sees, as a user writes it:
 * - a deserializer: `'json'`, `'string'`, `'raw'` or a function (bytes, record) => value;
 * - a Standard Schema (zod, valibot, arktype, ...): the value is read as JSON (the key as a string), then
 *   validated, and the handler gets the schema's output;
 * - `{ deserializer, schema }`: any deserializer, then the schema.
 */
export type RecordPartInput = Deserializer | StandardSchemaV1 | { readonly deserializer?: Deserializer; readonly schema: StandardSchemaV1 };

/** A record part's option after validation: a deserializer, and the schema its result must pass, if any. */
export interface ResolvedPart {
  readonly deserializer: Deserializer;
  readonly schema?: StandardSchemaV1;
}

/** Issues shown in a dead-letter reason; the rest are counted. */
const MAX_ISSUES_SHOWN = 5;
const MAX_ISSUE_LENGTH = 160;

/**
 * True if `value` implements Standard Schema v1. Checked before "is a function": an arktype schema is a
 * function too, and must be validated against, not called as a deserializer.
 *
 * @example
 * isStandardSchema(z.object({ id: z.number() })); // true
 * isStandardSchema('json'); // false
 */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const props = (value as { '~standard'?: unknown })['~standard'];
  return typeof props === 'object' && props !== null && (props as { version?: unknown }).version === 1
    && typeof (props as { validate?: unknown }).validate === 'function';
}

function isDeserializer(value: unknown): value is Deserializer {
  return value === 'json' || value === 'string' || value === 'raw' || (typeof value === 'function' && !isStandardSchema(value));
}

/**
 * Whether `value` is a valid `key` or `value` option.
 *
 * @example
 * isRecordPartInput({ deserializer: 'string', schema: z.string().uuid() }); // true
 */
export function isRecordPartInput(value: unknown): value is RecordPartInput {
  if (isDeserializer(value) || isStandardSchema(value)) return true;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { deserializer, schema, ...rest } = value as Record<string, unknown>;
  return Object.keys(rest).length === 0 && isStandardSchema(schema) && (deserializer === undefined || isDeserializer(deserializer));
}

/**
 * Splits a `key` or `value` option into its deserializer and schema. A schema alone reads a value as JSON
 * and a key as a string (their defaults), since a schema describes data, not bytes.
 *
 * @example
 * resolvePart(z.object({ id: z.number() }), 'json'); // { deserializer: 'json', schema }
 */
export function resolvePart(input: RecordPartInput, fallback: Deserializer): ResolvedPart {
  if (isStandardSchema(input)) return { deserializer: fallback, schema: input };
  if (isDeserializer(input)) return { deserializer: input };
  return { deserializer: input.deserializer ?? fallback, schema: input.schema };
}

/** What a `key` or `value` option gives the handler, for `lanes(options, handler)`'s record type. */
export type PartOutput<P, Default> = P extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<P>
  : P extends { readonly schema: infer S extends StandardSchemaV1 }
    ? StandardSchemaV1.InferOutput<S>
    : P extends RegistryDeserializer<infer R>
      ? R | null
    : P extends 'raw'
      ? Buffer | null
      : P extends 'string'
        ? string | null
        : P extends DeserializerFn<infer T>
          ? T
          : P extends 'json'
            ? unknown
            : Default;

/**
 * A record's key or value did not pass its Standard Schema. Not retriable: the record goes to the
 * dead-letter topic with reason `schema-validation`, the issues (paths and messages, cut short) in its
 * message.
 */
export class SchemaValidationError extends DeserializationError {
  /** At most five issues, each `path: message`, cut to 160 characters. */
  readonly issues: readonly string[];

  constructor(part: RecordPart, record: KafkaRecord, issues: readonly StandardSchemaV1.Issue[]) {
    const shown = issues.slice(0, MAX_ISSUES_SHOWN).map((issue) => issueText(part, issue));
    const more = issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : '';
    super(part, record, `does not match its schema: ${shown.length === 0 ? 'the schema gave no issue' : shown.join('; ')}${more}`);
    this.issues = shown;
  }
}

function issueText(part: RecordPart, issue: StandardSchemaV1.Issue): string {
  let path: string = part;
  try {
    for (const segment of issue.path ?? []) {
      const key: unknown = typeof segment === 'object' && segment !== null ? (segment as StandardSchemaV1.PathSegment).key : segment;
      path += typeof key === 'number' ? `[${key}]` : typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${thrownText(JSON.stringify(String(key)), 40)}]`;
    }
  } catch {
    path += '[?]';
  }
  return thrownText(`${path}: ${thrownText(issue.message, MAX_ISSUE_LENGTH)}`, MAX_ISSUE_LENGTH);
}

/**
 * Validates a deserialized key or value against its schema; the schema's output, or a promise of it when
 * the schema validates asynchronously.
 *
 * @throws SchemaValidationError when the value has issues; DeserializationError when the schema itself throws.
 * @example
 * validatePart(z.object({ id: z.number() }), { id: 1 }, record, 'value'); // { id: 1 }
 */
export function validatePart(schema: StandardSchemaV1, value: unknown, record: KafkaRecord, part: RecordPart): unknown {
  let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
  try {
    result = schema['~standard'].validate(value);
  } catch (error) {
    throw schemaThrew(part, record, error);
  }
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    return Promise.resolve(result).then(
      (settled) => outcome(settled, record, part),
      (error: unknown) => {
        throw schemaThrew(part, record, error);
      },
    );
  }
  return outcome(result as StandardSchemaV1.Result<unknown>, record, part);
}

function outcome(result: StandardSchemaV1.Result<unknown>, record: KafkaRecord, part: RecordPart): unknown {
  if (typeof result !== 'object' || result === null) {
    throw new DeserializationError(part, record, `the ${part} schema returned ${thrownText(result, 40)} instead of a result`);
  }
  if (result.issues) {
    const issues = Array.isArray(result.issues) ? (result.issues as StandardSchemaV1.Issue[]) : [];
    throw new SchemaValidationError(part, record, issues);
  }
  return result.value;
}

function schemaThrew(part: RecordPart, record: KafkaRecord, error: unknown): DeserializationError {
  return new DeserializationError(part, record, `the ${part} schema threw: ${thrownText(error instanceof Error ? error.message : error, 300)}`, { cause: error });
}
