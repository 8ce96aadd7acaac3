/**
 * The codec of a registered JSON Schema: the payload is JSON text, checked against the schema with Ajv (compiled
 * once per schema id). Its own module, loaded by the first JSON Schema codec only: `avro()` and `protobuf()` load
 * none of Ajv.
 */
import Ajv, { type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import { CodecError } from './errors';
import type { Codec, RegisteredSchema } from './types';

// fatal: invalid UTF-8 in a JSON payload is an error, not U+FFFD (as the 'json' deserializer reads it).
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * One validator per draft, made at the first schema of it. `strict: false`: a registered schema may carry keywords
 * Ajv does not know (`javaType`, titles of tools); they are ignored, as the registry's serializers ignore them.
 * `validateSchema: false`: draft-04 and -06 schemas are read with draft-07's rules (the keywords they share mean the same).
 */
const validators = new Map<string, Ajv>();

function validatorFor(schema: unknown): Ajv {
  const dialect = typeof schema === 'object' && schema !== null ? String((schema as { $schema?: unknown }).$schema ?? '') : '';
  const draft = dialect.includes('2020-12') ? '2020-12' : dialect.includes('2019-09') ? '2019-09' : '07';
  let ajv = validators.get(draft);
  if (ajv === undefined) {
    const options = { strict: false, validateSchema: false, allErrors: false };
    ajv = draft === '2020-12' ? new Ajv2020(options) : draft === '2019-09' ? new Ajv2019(options) : new Ajv(options);
    validators.set(draft, ajv);
  }
  return ajv;
}

/** Ajv's first error as a reader would say it: where, what was expected, what came. */
function describeErrors(errors: ErrorObject[] | null | undefined, value: unknown): string {
  const [error] = errors ?? [];
  if (error === undefined) return 'it does not match';
  const at = error.instancePath === '' ? 'the value' : error.instancePath;
  let got: unknown = value;
  for (const part of error.instancePath.split('/').slice(1)) got = (got as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  const text = JSON.stringify(got);
  return `${at} ${error.message ?? 'does not match'} (${error.keyword} ${JSON.stringify(error.params)}), got ${text === undefined ? 'nothing' : text.length > 80 ? `${text.slice(0, 80)}...` : text}`;
}

export function jsonCodec(schema: RegisteredSchema): Codec {
  let validate: ValidateFunction;
  try {
    const parsed = JSON.parse(schema.definition) as AnySchema;
    validate = validatorFor(parsed).compile(parsed);
  } catch (error) {
    throw new CodecError(`${schema.ref} is not a JSON Schema Ajv can compile: ${error instanceof Error ? error.message : String(error)}`);
  }
  const check = (value: unknown, what: string): void => {
    if (!validate(value)) throw new CodecError(`${what} does not match JSON Schema ${schema.ref}: ${describeErrors(validate.errors, value)}`);
  };
  return {
    format: 'json',
    decode(payload) {
      let value: unknown;
      try {
        value = JSON.parse(utf8.decode(payload)) as unknown;
      } catch (error) {
        throw new CodecError(`${payload.length} bytes are not the JSON text ${schema.ref} describes: ${error instanceof Error ? error.message : String(error)}`);
      }
      check(value, `the JSON text of ${payload.length} bytes`);
      return value;
    },
    encode(value) {
      check(value, 'the value');
      return { payload: Buffer.from(JSON.stringify(value)) };
    },
  };
}
