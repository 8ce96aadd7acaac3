import { LanesError } from '../errors';

/** Every negative return code of the completion scripts, in one place (BullMQ's habit). */
export const ScriptErrorCode = {
  StaleEpoch: -1,
  NotAdmitted: -2,
  LaneConflict: -3,
  NotHead: -4,
  StaleAttempt: -5,
} as const;
export type ScriptErrorCode = (typeof ScriptErrorCode)[keyof typeof ScriptErrorCode];

/** A newer owner of the partition holds a higher epoch: this caller was fenced off and changed nothing. */
export class StaleEpochError extends LanesError {}
/** An offset above the highest delivered offset was given: it was never admitted. */
export class NotAdmittedError extends LanesError {}
/** The lane is already blocked on another head record. */
export class LaneConflictError extends LanesError {}
/** The record given as head is not (or no longer) its lane's head: a duplicated retry or release. */
export class NotHeadError extends LanesError {}
/** The lane's head is the record given, but at another attempt: a stale retry copy. */
export class StaleAttemptError extends LanesError {}
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
