import { LanesError } from '../errors';

/**
 * The committer's lease on its group expired or was taken over during the run. Nothing more was
 * committed; what was committed before moved forward only. The next run starts afresh.
 */
export class LeaseLostError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
  }
}

/**
 * Kafka did not take a commit: reading the group back after the commit showed an offset below the
 * planned one. kafkajs returns from some commits without committing (a consumer that is not running, a
 * partition not assigned to the admin's short-lived member), so every run reads its commits back.
 */
export class CommitNotAppliedError extends LanesError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { ...options, retriable: true });
  }
}

/** The committer state in Redis holds something this version cannot read. */
export class CorruptStateError extends LanesError {}
