import { parseTakenReply, type ScriptCall } from './args';
import { UnexpectedReplyError } from './errors';
import { outputClaimKey, partitionTag, STEP_BLOCK, stepBlockKey, stepBlocksOf, steppedKey, stepsKey } from './keys';
import { bounded, runScript, type CallLimits, type RedisClient } from './scripts';
import type { OutputId, PartitionRef, StepsRef } from './types';
import { TagBatches } from './tag-batches';

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

/** One call storing the step results of several records of one partition (`save-steps-1.lua`). */
export function saveStepsCall(saves: ReadonlyArray<{ at: StepsRef; name: string; value: string }>, ttlMs: number): ScriptCall {
  const keys = [steppedKey(saves[0]!.at.ref)];
  // The block of each save's offset, by its index in KEYS (1-based): a call's records are mostly in one block.
  const blocks = new Map<number, number>();
  const flat = new Array<string | number>(4 * saves.length);
  let top = -1;
  for (let j = 0; j < saves.length; j += 1) {
    const { at, name, value } = saves[j]!;
    const block = Math.floor(at.offset / STEP_BLOCK);
    let index = blocks.get(block);
    if (index === undefined) {
      index = keys.push(stepBlockKey(at.ref, block));
      blocks.set(block, index);
    }
    flat[4 * j] = index;
    flat[4 * j + 1] = String(at.offset);
    flat[4 * j + 2] = wellFormed(name);
    flat[4 * j + 3] = wellFormed(value);
    if (at.offset > top) top = at.offset;
  }
  return { keys, argv: [String(Math.ceil(ttlMs)), String(top), JSON.stringify(flat)] };
}

/**
 * Text the script's JSON decoder takes: a lone surrogate (not UTF-16 text) becomes U+FFFD, as it would in the UTF-8
 * sent to Redis anyway.
 */
function wellFormed(text: string): string {
  const unicode = text as unknown as { isWellFormed(): boolean; toWellFormed(): string };
  return unicode.isWellFormed() ? text : unicode.toWellFormed();
}

/** The `save-steps-1.lua` reply: per save, `undefined` (stored) or the result stored before. */
export function parseSaveStepsReply(reply: unknown, count: number): Array<string | undefined> {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) throw new UnexpectedReplyError(`saveSteps: unexpected reply ${JSON.stringify(reply)}`);
  const results = new Array<string | undefined>(count).fill(undefined);
  for (let i = 0; i < reply.length; i += 2) {
    const position = Number(reply[i]);
    if (!(position >= 1 && position <= count)) throw new UnexpectedReplyError(`saveSteps: unexpected reply ${JSON.stringify(reply)}`);
    results[position - 1] = textOf(reply[i + 1]);
  }
  return results;
}

/** One call reading the step results of several records of one partition (`load-steps-1.lua`). */
export function loadStepsCall(at: readonly StepsRef[]): ScriptCall {
  const keys = new Array<string>(2 * at.length);
  const argv = new Array<string>(at.length);
  for (let j = 0; j < at.length; j += 1) {
    const one = at[j]!;
    keys[2 * j] = stepBlockKey(one.ref, Math.floor(one.offset / STEP_BLOCK));
    keys[2 * j + 1] = stepsKey(one);
    argv[j] = String(one.offset);
  }
  return { keys, argv };
}

/** The `load-steps-1.lua` reply: per record, its stored results (its block's field first, then its own hash's). */
export function parseLoadStepsReply(reply: unknown, count: number): Array<Map<string, string>> {
  if (!Array.isArray(reply) || reply.length !== count) throw new UnexpectedReplyError(`loadSteps: unexpected reply ${JSON.stringify(reply)}`);
  return reply.map((entry: unknown) => {
    const list = Array.isArray(entry) ? entry : [];
    const map = new Map<string, string>();
    const field = list.length > 0 ? textOf(list[0]) : '';
    if (field !== '') {
      const parsed = JSON.parse(field) as unknown;
      if (typeof parsed !== 'object' || parsed === null) throw new UnexpectedReplyError(`loadSteps: unexpected stored steps ${field}`);
      for (const [name, value] of Object.entries(parsed)) map.set(name, String(value));
    }
    for (let i = 1; i + 1 < list.length; i += 2) {
      const name = textOf(list[i]);
      if (!map.has(name)) map.set(name, textOf(list[i + 1]));
    }
    return map;
  });
}

function textOf(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

export function claimOutputCall(group: string, id: OutputId, runner: string, ttlMs: number): ScriptCall {
  return { keys: [outputClaimKey(group, id)], argv: [runner, String(Math.ceil(ttlMs))] };
}


/**
 * The exactly-once state in the group's Redis, every mutation one script or command (safe to repeat). Step results
 * are read once per record (its field of its step block) and stored once per step; reads and stores made in one turn
 * of the event loop go as one call per partition, so the records running at once share their round trips.
 *
 * @example
 * const effects = new RedisEffects(redis);
 * await effects.saveStep({ ref, offset: 41 }, 'charge', '{"id":"ch_1"}', 86_400_000);
 */
export class RedisEffects {
  readonly redis: RedisClient;
  readonly limits: CallLimits;
  readonly #batches: StepBatches;

  constructor(redis: RedisClient, limits: CallLimits = { timeoutMs: 5_000 }, batches?: StepBatches) {
    this.redis = redis;
    this.limits = limits;
    // Shared by every invocation of one store: the batches' calls carry the store's own limits.
    this.#batches = batches ?? {
      loads: new TagBatches(async (at) => {
        const reply = await runScript(redis, 'loadSteps', loadStepsCall(at), limits);
        return parseLoadStepsReply(reply, at.length);
      }),
      saves: new TagBatches(async (saves) => {
        // One time to live per call, the longest asked (the same options give every record of a function the same).
        let ttlMs = 0;
        for (const save of saves) if (save.ttlMs > ttlMs) ttlMs = save.ttlMs;
        const reply = await runScript(redis, 'saveSteps', saveStepsCall(saves, ttlMs), limits);
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
    this.#batches.used = true;
    return this.#batches.saves.add(partitionTag(at.ref), { at, name, value, ttlMs });
  }

  async forgetSteps(at: readonly StepsRef[]): Promise<void> {
    // One HDEL per step block: the blocks of one partition share its slot (a cluster refuses keys of several slots).
    const byTag = new Map<string, StepsRef[]>();
    for (const one of at) {
      const tag = partitionTag(one.ref);
      const list = byTag.get(tag);
      if (list === undefined) byTag.set(tag, [one]);
      else list.push(one);
    }
    const deletes = [...byTag.values()].flatMap((list) =>
      stepBlocksOf(list[0]!.ref, list.map((one) => one.offset)).map(({ key, offsets }) =>
        bounded(this.redis.hdel(key, ...offsets.map(String)), 'steps delete', this.limits)),
    );
    await Promise.all(deletes);
  }

  async claimOutput(group: string, id: OutputId, runner: string, ttlMs: number): Promise<boolean> {
    const reply = await runScript(this.redis, 'claimOutput', claimOutputCall(group, id, runner, ttlMs), this.limits);
    return parseTakenReply(reply, 'claimOutput') === undefined;
  }
}
