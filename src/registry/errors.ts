import { LanesError } from '../errors';

/**
 * A schema registry did not answer (a timeout, a refused connection, a 5xx, a 429, a refused credential) while a
 * record's key or value was being read. Retriable, and never an attempt of the record: the bytes are not at fault,
 * so the record goes back to the event source (a partial batch response) with the records of its lane behind it,
 * and runs again when the registry answers; it is never dead-lettered for it.
 */
export class SchemaRegistryUnavailableError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
  }
}

/** A payload does not decode with its schema, or a value does not encode with it: the reason says which and why. */
export class CodecError extends Error {
  override readonly name = 'CodecError';
}
