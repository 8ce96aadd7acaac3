/**
 * The errors a completion port's call throws when the state it names is not what the caller holds: the port's
 * contract, thrown alike by the Redis store (from its scripts' codes, `completion/errors.ts`) and the in-memory model.
 */
import { LanesError } from '../errors';

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
