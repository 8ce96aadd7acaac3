import { NonRetriableError, RetryLaterError } from '../errors';
import { DeserializationError } from '../options/errors';

/** What happens to a record after its handler failed (DESIGN.md sections 3 G4 and 6). */
export type FailureDecision =
  | { readonly action: 'retry'; readonly delayMs: number | undefined }
  | { readonly action: 'dead-letter'; readonly reason: DeadLetterReason };

export type DeadLetterReason = 'non-retriable' | 'programming-error' | 'deserialization' | 'attempts-exhausted' | 'malformed';

// Programming errors are never retried: running the same code on the same input fails the same way (kafkajs).
function isProgrammingError(error: unknown): boolean {
  return (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError ||
    error instanceof SyntaxError
  );
}

/**
 * Decides between the retry topic and the dead-letter topic for a failed attempt.
 *
 * @example
 * decideFailure(new RetryLaterError(30_000), 1, 5); // { action: 'retry', delayMs: 30000 }
 * decideFailure(new TypeError('x is undefined'), 1, 5); // { action: 'dead-letter', reason: 'programming-error' }
 */
export function decideFailure(error: unknown, attempt: number, maxAttempts: number): FailureDecision {
  if (error instanceof NonRetriableError) return { action: 'dead-letter', reason: 'non-retriable' };
  if (error instanceof DeserializationError) return { action: 'dead-letter', reason: 'deserialization' };
  if (isProgrammingError(error)) {
    return { action: 'dead-letter', reason: 'programming-error' };
  }
  if (attempt >= maxAttempts) return { action: 'dead-letter', reason: 'attempts-exhausted' };
  return { action: 'retry', delayMs: error instanceof RetryLaterError ? error.delayMs : undefined };
}

/** The name and message of anything thrown, for headers and logs. */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: typeof error, message: String(error) };
}
