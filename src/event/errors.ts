import { LanesError } from '../errors';

/**
 * The event as a whole is not a Kafka trigger event (not an object, no `records` object, unknown `eventSource`,
 * a `records` key that is not `<topic>-<partition>`, ...). Not retriable: the same event fails the same way.
 * A malformed record is never this error; it becomes a `DecodeFailure` of its partition.
 */
export class EventDecodeError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: false });
  }
}
