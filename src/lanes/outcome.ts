import { thrownText } from '../describe';
import { LanesError, NonRetriableError, RetryLaterError } from '../errors';
import { DeserializationError } from '../options/errors';
import { SchemaValidationError } from '../options/standard-schema';

/** What happens to a record after its handler failed (docs/ARCHITECTURE.md, "Guarantees" and "Copies and their headers"). */
export type FailureDecision =
  | { readonly action: 'retry'; readonly delayMs: number | undefined }
  | { readonly action: 'dead-letter'; readonly reason: DeadLetterReason };

export type DeadLetterReason =
  | 'non-retriable'
  | 'programming-error'
  | 'deserialization'
  | 'schema-validation'
  | 'attempts-exhausted'
  | 'malformed'
  | 'duplicate-offset';

const PROGRAMMING_ERROR_NAMES = new Set(['TypeError', 'RangeError', 'ReferenceError', 'SyntaxError']);

// Programming errors are never retried: running the same code on the same input fails the same way (kafkajs).
// The name check catches them from another realm (`node:vm`), where `instanceof` fails.
function isProgrammingError(error: unknown): boolean {
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError || error instanceof SyntaxError) {
    return true;
  }
  return !(error instanceof Error) && Object.prototype.toString.call(error) === '[object Error]' && PROGRAMMING_ERROR_NAMES.has((error as Error).name);
}

/**
 * Decides between the retry topic and the dead-letter topic for a failed attempt.
 *
 * @example
 * decideFailure(new RetryLaterError(30_000), 1, 5); // { action: 'retry', delayMs: 30000 }
 * decideFailure(new TypeError('x is undefined'), 1, 5); // { action: 'dead-letter', reason: 'programming-error' }
 */
export function decideFailure(error: unknown, attempt: number, maxAttempts: number): FailureDecision {
  // Any framework error that says it is not retriable is treated like a NonRetriableError (kafkajs' flag).
  if (error instanceof NonRetriableError || (error instanceof LanesError && !error.retriable && !(error instanceof DeserializationError))) {
    return { action: 'dead-letter', reason: 'non-retriable' };
  }
  if (error instanceof SchemaValidationError) return { action: 'dead-letter', reason: 'schema-validation' };
  if (error instanceof DeserializationError) return { action: 'dead-letter', reason: 'deserialization' };
  if (isProgrammingError(error)) {
    return { action: 'dead-letter', reason: 'programming-error' };
  }
  if (attempt >= maxAttempts) return { action: 'dead-letter', reason: 'attempts-exhausted' };
  return { action: 'retry', delayMs: error instanceof RetryLaterError ? error.delayMs : undefined };
}

/** Longest error message kept for logs; hand-off headers cut it further. */
const MAX_MESSAGE_LENGTH = 4_000;

/** The name and message of anything thrown, for headers and logs; bounded in length, never throws itself. */
export function describeError(error: unknown): { name: string; message: string } {
  try {
    if (error instanceof Error) {
      return { name: thrownText(error.name, 200), message: thrownText(error.message, MAX_MESSAGE_LENGTH) };
    }
  } catch {
    // A Proxy whose traps throw: described as the object it claims to be, below.
  }
  return { name: error === null ? 'null' : typeof error, message: thrownText(error, MAX_MESSAGE_LENGTH) };
}
