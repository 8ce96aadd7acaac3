import type { CopyClaim, EffectsPort, OutputId, StepsRef } from '../engine/effects';
import { escapeName } from '../options/names';
import type { ScriptCall } from '../completion/args';
import { UnexpectedReplyError } from '../completion/errors';
import { partitionTag } from '../completion/keys';
import { bounded, runScript, type CallLimits, type RedisClient } from '../completion/scripts';
import type { PartitionRef } from '../completion/types';

/*
 * Key names of the exactly-once state. Step results and copy entries live under their record's first-origin
 * partition tag (one slot with its done bits and lanes); an output claim under a tag of the output's own origin,
 * so the repeats of one output meet in one slot whichever partition of the topic they landed in.
 */

/** hash: step name -> serialized result, of one record. */
export function stepsKey(at: StepsRef): string {
  return `${partitionTag(at.ref)}:steps:${at.offset}`;
}

/** string: "attempt|copy|state" of an unordered record in the retry path. */
export function copyKey(ref: PartitionRef, offset: number): string {
  return `${partitionTag(ref)}:copy:${offset}`;
}

/** string: the record (its first origin) that took an output of another stage (`dedupeOutputs`). */
export function outputClaimKey(group: string, id: OutputId): string {
  return `{kl:${escapeName(group)}:out:${escapeName(id.group)}:${escapeName(id.origin.topic)}:${id.origin.partition}}:${id.origin.offset}:${id.index}`;
}

export function saveStepCall(at: StepsRef, name: string, value: string, ttlMs: number): ScriptCall {
  return { keys: [stepsKey(at)], argv: [name, value, String(Math.ceil(ttlMs))] };
}

export function claimOutputCall(group: string, id: OutputId, runner: string, ttlMs: number): ScriptCall {
  return { keys: [outputClaimKey(group, id)], argv: [runner, String(Math.ceil(ttlMs))] };
}

export function claimCopyCall(ref: PartitionRef, offset: number, attempt: number, copy: string, ttlMs: number, done: boolean): ScriptCall {
  return { keys: [copyKey(ref, offset)], argv: [String(attempt), copy, String(Math.ceil(ttlMs)), done ? 'done' : 'claim'] };
}

/** `{ 0 }` or `{ 1, value }` of the effects scripts: `undefined` or the value. */
export function parseTakenReply(reply: unknown, what: string): string | undefined {
  if (!Array.isArray(reply) || (reply[0] !== 0 && reply[0] !== 1)) throw new UnexpectedReplyError(`${what}: unexpected reply ${JSON.stringify(reply)}`);
  if (reply[0] === 0) return undefined;
  const value: unknown = reply[1];
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

/**
 * The exactly-once state in the group's Redis: one round trip per call, every mutation one script (safe to
 * repeat). Step results are read once per record (a hash), stored once per step.
 *
 * @example
 * const effects = new RedisEffects(redis);
 * await effects.saveStep({ ref, offset: 41 }, 'charge', '{"id":"ch_1"}', 86_400_000);
 */
export class RedisEffects implements EffectsPort {
  readonly redis: RedisClient;
  readonly limits: CallLimits;

  constructor(redis: RedisClient, limits: CallLimits = { timeoutMs: 5_000 }) {
    this.redis = redis;
    this.limits = limits;
  }

  /** The same store with other call limits (an invocation's deadline signal). */
  withLimits(limits: CallLimits): RedisEffects {
    return new RedisEffects(this.redis, { ...this.limits, ...limits });
  }

  async loadSteps(at: StepsRef): Promise<ReadonlyMap<string, string>> {
    const hash = await bounded(this.redis.hgetall(stepsKey(at)), 'steps read', this.limits);
    return new Map(Object.entries(hash));
  }

  async saveStep(at: StepsRef, name: string, value: string, ttlMs: number): Promise<string | undefined> {
    return parseTakenReply(await runScript(this.redis, 'saveStep', saveStepCall(at, name, value, ttlMs), this.limits), 'saveStep');
  }

  async forgetSteps(at: readonly StepsRef[]): Promise<void> {
    // One key each: keys of several partitions are in several slots (one multi-key DEL would fail on a cluster).
    await Promise.all(at.map((one) => bounded(this.redis.unlink(stepsKey(one)), 'steps delete', this.limits)));
  }

  async claimOutput(group: string, id: OutputId, runner: string, ttlMs: number): Promise<boolean> {
    const reply = await runScript(this.redis, 'claimOutput', claimOutputCall(group, id, runner, ttlMs), this.limits);
    return parseTakenReply(reply, 'claimOutput') === undefined;
  }

  async claimCopy(ref: PartitionRef, offset: number, attempt: number, copy: string, ttlMs: number, done: boolean): Promise<CopyClaim> {
    const reply = await runScript(this.redis, 'claimCopy', claimCopyCall(ref, offset, attempt, copy, ttlMs, done), this.limits);
    return parseTakenReply(reply, 'claimCopy') === undefined ? 'claimed' : 'stale';
  }
}
