import { LanesError } from '../errors';

/**
 * Records could not be handed off: the broker did not acknowledge them (acks=all) in time, or the write was
 * aborted. Retriable: nothing was marked done (G3), so the records can be handed off again; some of them may
 * have been written anyway, which the retry path's dedupe by (origin, attempt) absorbs.
 */
export class HandOffError extends LanesError {
  /** The target topics of the records this caller could not hand off. */
  readonly topics: readonly string[];

  constructor(message: string, options: { topics: readonly string[]; cause?: unknown }) {
    super(message, { retriable: true, cause: options.cause });
    this.topics = options.topics;
  }
}
