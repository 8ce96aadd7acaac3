import type { CopyClaim, EffectsPort, OutputId, StepsRef } from '../lanes/effects';
import { escapeName } from '../options/names';
import type { ScriptCall } from '../completion/args';
import { UnexpectedReplyError } from '../completion/errors';
import { partitionTag, stepsKey } from '../completion/keys';
import { bounded, runScript, type CallLimits, type RedisClient } from '../completion/scripts';
import type { PartitionRef } from '../completion/types';
import { TagBatches } from './batches';

interface StepBatches {
  readonly loads: TagBatches<StepsRef, Map<string, string>>;
  readonly saves: TagBatches<StepSave, string | undefined>;
  /** Whether a step was read or stored through this store (or a view of it) yet. */
  used: boolean;
}

interface StepSave {
  readonly at: StepsRef;
  readonly name: string;
  readonly value: string;
  readonly ttlMs: number;
}

/*
 * Key names of the exactly-once state. Step results and copy entries live under their record's first-origin
 * partition tag (one slot with its done bits and lanes); an output claim under a tag of the output's own origin,
 * so the repeats of one output meet in one slot whichever partition of the topic they landed in.
 */

export { stepsKey };

/** string: the highest offset of a partition with stored step results (`save-steps-1.lua`). */
export function steppedKey(ref: PartitionRef): string {
  return `${partitionTag(ref)}:stepped`;
}

/** string: "attempt|copy|state" of an unordered record in the retry path. */
export function copyKey(ref: PartitionRef, offset: number): string {
  return `${partitionTag(ref)}:copy:${offset}`;
}

/** string: the record (its first origin) that took an output of another stage (`dedupeOutputs`). */
export function outputClaimKey(group: string, id: OutputId): string {
  return `{kl:${escapeName(group)}:out:${escapeName(id.group)}:${escapeName(id.origin.topic)}:${id.origin.partition}}:${id.origin.offset}:${id.index}`;
}

/** One call storing the step results of several records of one partition (`save-steps-1.lua`). */
export function saveStepsCall(saves: ReadonlyArray<{ at: StepsRef; name: string; value: string }>, ttlMs: number): ScriptCall {
  const keys = new Array<string>(saves.length + 1);
  const argv = new Array<string>(2 * saves.length + 2);
  argv[0] = String(Math.ceil(ttlMs));
  let top = -1;
  for (let j = 0; j < saves.length; j += 1) {
    const { at, name, value } = saves[j]!;
    keys[j + 1] = stepsKey(at);
    argv[2 * j + 2] = name;
    argv[2 * j + 3] = value;
    if (at.offset > top) top = at.offset;
  }
  keys[0] = steppedKey(saves[0]!.at.ref);
  argv[1] = String(top);
  return { keys, argv };
}

/** The `save-steps-1.lua` reply: per save, `undefined` (stored) or the result stored before. */
export function parseSaveStepsReply(reply: unknown, count: number): Array<string | undefined> {
  if (!Array.isArray(reply) || reply.length !== count) throw new UnexpectedReplyError(`saveSteps: unexpected reply ${JSON.stringify(reply)}`);
  return reply.map((one: unknown) => (Array.isArray(one) ? textOf(one[0]) : undefined));
}

/** The `load-steps-1.lua` reply: per record, its stored results. */
export function parseLoadStepsReply(reply: unknown, count: number): Array<Map<string, string>> {
  if (!Array.isArray(reply) || reply.length !== count) throw new UnexpectedReplyError(`loadSteps: unexpected reply ${JSON.stringify(reply)}`);
  return reply.map((flat: unknown) => {
    const map = new Map<string, string>();
    const list = Array.isArray(flat) ? flat : [];
    for (let i = 0; i + 1 < list.length; i += 2) map.set(textOf(list[i]), textOf(list[i + 1]));
    return map;
  });
}

function textOf(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
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
 * The exactly-once state in the group's Redis, every mutation one script (safe to repeat). Step results are read
 * once per record (a hash) and stored once per step; reads, stores and deletes made in one turn of the event loop
 * go as one call per partition, so the records running at once share their round trips.
 *
 * @example
 * const effects = new RedisEffects(redis);
 * await effects.saveStep({ ref, offset: 41 }, 'charge', '{"id":"ch_1"}', 86_400_000);
 */
export class RedisEffects implements EffectsPort {
  readonly redis: RedisClient;
  readonly limits: CallLimits;
  readonly #batches: StepBatches;

  constructor(redis: RedisClient, limits: CallLimits = { timeoutMs: 5_000 }, batches?: StepBatches) {
    this.redis = redis;
    this.limits = limits;
    // Shared by every invocation of one store: the batches' calls carry the store's own limits.
    this.#batches = batches ?? {
      loads: new TagBatches(async (at) => {
        const reply = await runScript(redis, 'loadSteps', { keys: at.map(stepsKey), argv: [] }, limits);
        return parseLoadStepsReply(reply, at.length);
      }),
      saves: new TagBatches(async (saves) => {
        const reply = await runScript(redis, 'saveSteps', saveStepsCall(saves, saves[0]!.ttlMs), limits);
        return parseSaveStepsReply(reply, saves.length);
      }),
      used: false,
    };
  }

  /** The same store with other call limits (an invocation's deadline signal) for its unbatched calls. */
  withLimits(limits: CallLimits): RedisEffects {
    return new RedisEffects(this.redis, { ...this.limits, ...limits }, this.#batches);
  }

  async stepsStoredUpTo(ref: PartitionRef): Promise<number | undefined> {
    if (!this.#batches.used) return undefined;
    const stored = await bounded(this.redis.get(steppedKey(ref)), 'steps marker read', this.limits);
    return stored === null ? -1 : Number(stored);
  }

  loadSteps(at: StepsRef): Promise<ReadonlyMap<string, string>> {
    this.#batches.used = true;
    return this.#batches.loads.add(partitionTag(at.ref), at);
  }

  saveStep(at: StepsRef, name: string, value: string, ttlMs: number): Promise<string | undefined> {
    // One time to live per call: the same options give every record of a function the same one.
    this.#batches.used = true;
    return this.#batches.saves.add(`${partitionTag(at.ref)}\n${ttlMs}`, { at, name, value, ttlMs });
  }

  async forgetSteps(at: readonly StepsRef[]): Promise<void> {
    // One UNLINK per partition: the keys of one partition share its slot (a cluster refuses keys of several slots).
    const byTag = new Map<string, string[]>();
    for (const one of at) {
      const tag = partitionTag(one.ref);
      const keys = byTag.get(tag);
      if (keys === undefined) byTag.set(tag, [stepsKey(one)]);
      else keys.push(stepsKey(one));
    }
    await Promise.all([...byTag.values()].map((keys) => bounded(this.redis.unlink(...keys), 'steps delete', this.limits)));
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
