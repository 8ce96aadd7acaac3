import { LanesError } from '../errors';

/**
 * Topics were created (or existed) but Kafka's metadata did not show a leader for every partition in time: a
 * write now could fail. Retriable: calling again waits again.
 */
export class TopicsNotReadyError extends LanesError {
  /** The topics that were not ready. */
  readonly topics: readonly string[];

  constructor(message: string, options: { topics: readonly string[]; cause?: unknown }) {
    super(message, { retriable: true, cause: options.cause });
    this.topics = options.topics;
  }
}
