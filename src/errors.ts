import { boundedText, clip } from './describe';

/**
 * The framework's error family. Every error carries `retriable` (kafkajs' habit) and an optional `cause`,
 * and takes its `name` from the concrete class (`new.target.name`), so names are never copied by hand.
 */
export class LanesError extends Error {
  readonly retriable: boolean;

  constructor(message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.retriable = options.retriable ?? false;
  }
}

/** Bad configuration, found at start-up: says what was expected and what was given. */
export class ConfigError extends LanesError {}

/**
 * Thrown by a user's handler: the record goes straight to the dead-letter topic, without further attempts.
 *
 * @example
 * if (!order.customerId) throw new NonRetriableError('order has no customerId');
 */
export class NonRetriableError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: false });
  }
}

/**
 * Thrown by a user's handler: retry this record after `delayMs` instead of the backoff policy's delay.
 *
 * @example
 * if (response.status === 429) throw new RetryLaterError(30_000, 'rate limited');
 */
export class RetryLaterError extends LanesError {
  readonly delayMs: number;

  constructor(delayMs: number, message = `retry in ${delayMs} ms`, options: { cause?: unknown } = {}) {
    if (!Number.isSafeInteger(delayMs) || delayMs < 0) {
      throw new RangeError(`Expected \`delayMs\` to be a non-negative integer, got \`${String(delayMs)}\` (${typeof delayMs})`);
    }
    super(message, { ...options, retriable: true });
    this.delayMs = delayMs;
  }
}

/** Raised when records could not be handed off and the event source has no partial batch response. */
export class BatchNotHandedOffError extends LanesError {}

/** The invocation is about to reach its deadline: running records are aborted and count as failed. */
export class DeadlineError extends LanesError {
  constructor() {
    super('the invocation deadline is near: record aborted', { retriable: true });
  }
}

/** The record ran longer than `recordTimeoutMs`. */
export class RecordTimeoutError extends LanesError {
  constructor(message: string) {
    super(message, { retriable: true });
  }
}

/**
 * Formats a value for an error message the way p-limit does: `0` (number). Bounded in depth and length and
 * never throws, whatever the value (a record nested 20,000 levels deep, a Proxy): it names bad input.
 *
 * @example
 * describeValue(0); // '`0` (number)'
 */
export function describeValue(value: unknown): string {
  const shown = clip(typeof value === 'string' ? value : boundedText(value, { maxLength: 80 }), 80);
  let type: string = typeof value;
  try {
    if (value === null) type = 'null';
    else if (Array.isArray(value)) type = 'array';
  } catch {
    // A revoked Proxy: `typeof` is all that can be said.
  }
  return `\`${shown}\` (${type})`;
}

/** A step name was used twice in one run of a record, or is not a non-empty string: a programming error. */
export class StepNameError extends LanesError {}

/** A step's serialized result is larger than `steps.maxBytes`: it could not be stored (not retried). */
export class StepResultTooLargeError extends LanesError {}
