import { LanesError } from '../errors';
import { LaneConflictError, NotAdmittedError, NotHeadError, StaleAttemptError, StaleEpochError } from '../ports/errors';

/** Every negative return code of the completion scripts, in one place (BullMQ's habit). */
export const ScriptErrorCode = {
  StaleEpoch: -1,
  NotAdmitted: -2,
  LaneConflict: -3,
  NotHead: -4,
  StaleAttempt: -5,
} as const;
export type ScriptErrorCode = (typeof ScriptErrorCode)[keyof typeof ScriptErrorCode];

/** A Redis call was given up: no answer in time, or the invocation's deadline came first. */
export class RedisCallAbortedError extends LanesError {
  constructor(message: string) {
    super(message, { retriable: true });
  }
}

/** A script returned something this version does not know: a mismatched script version. */
export class UnexpectedReplyError extends LanesError {}

/** Turns a negative script code into its typed error. */
export function scriptError(code: number, detail: string, where: string): LanesError {
  switch (code) {
    case ScriptErrorCode.StaleEpoch:
      return new StaleEpochError(`${where}: stale epoch, a newer owner fenced this caller off; nothing changed`);
    case ScriptErrorCode.NotAdmitted:
      return new NotAdmittedError(`${where}: offset ${detail} was never admitted (above the highest delivered offset)`);
    case ScriptErrorCode.LaneConflict:
      return new LaneConflictError(`${where}: lane is already blocked on head offset ${detail}`);
    case ScriptErrorCode.NotHead:
      return new NotHeadError(
        `${where}: not the lane's head (${detail === '' ? 'the lane is free' : `head is offset ${detail}`})`,
      );
    case ScriptErrorCode.StaleAttempt:
      return new StaleAttemptError(`${where}: stale attempt, the lane's head is at attempt ${detail}`);
    default:
      return new UnexpectedReplyError(`${where}: unexpected script reply code ${code}`);
  }
}
