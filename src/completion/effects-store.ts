import { UnexpectedReplyError } from './errors';
import { legacyStepsKey, outputClaimKey, outputClaimTag, partitionTag, steppedKey, stepsBlockKey, stepsBlockOf } from './keys';
import { stepBlocks, stepField, type ScriptCall } from './args';
import { bounded, runScript, type RedisClient } from './scripts';
import type { CallLimits } from '../ports/limits';
import type { EffectsPort, OutputId, StepsRef, StoredSteps } from '../ports/effects';
import type { PartitionRef } from '../ports/partition';
import { TagBatches } from './tag-batches';

/**
 * The most records one step read, step store or output claim call carries. The records of a turn go out as several
 * calls at once, so those of the first call go on while Redis runs the rest. Chosen with `npm run bench:steps`
 * (docs/performance.md, "Fourth pass"): against one call for all, three steps ran 8 to 15% faster and one step as
 * fast; of 4, 8, 16, 32 and 64, 16 did best in one-off runs.
 */
export const RECORDS_PER_CALL = 16;

interface EffectBatches {
  readonly loads: TagBatches<StepsRef, Map<string, string>>;
  readonly saves: TagBatches<StepSave, string | undefined>;
  readonly claims: TagBatches<OutputClaim, boolean>;
  /** Whether a step was read or stored through this store (or a view of it) yet. */
  used: boolean;
  /** Partitions (tags) whose marker was read while no step had been used yet: each is read once then. */
  readonly probed: Set<string>;
}

interface StepSave {
  readonly at: StepsRef;
  readonly name: string;
  readonly value: string;
  readonly ttlMs: number;
}

/**
 * One call storing the step results of several records of one partition (`save-steps-1.lua`): each is a field of its
 * record's step block, and the records of the call share their blocks' keys.
 */
export function saveStepsCall(saves: ReadonlyArray<{ at: StepsRef; name: string; value: string }>, ttlMs: number): ScriptCall {
  const keys: string[] = [steppedKey(saves[0]!.at.ref)];
  const argv = new Array<string>(3 * saves.length + 2);
  argv[0] = String(Math.ceil(ttlMs));
  // The block of each save, by its first offset: its index in keys (1 is the first block).
  const blocks = new Map<number, number>();
  let top = -1;
  for (let j = 0; j < saves.length; j += 1) {
    const { at, name, value } = saves[j]!;
    const first = stepsBlockOf(at.offset);
    let block = blocks.get(first);
    if (block === undefined) {
      block = keys.push(stepsBlockKey(at)) - 1;
      blocks.set(first, block);
    }
    argv[3 * j + 2] = String(block);
    argv[3 * j + 3] = stepField(at.offset, name);
    argv[3 * j + 4] = value;
    if (at.offset > top) top = at.offset;
  }
  argv[1] = String(top);
  return { keys, argv };
}

/** One call reading the step results of several records of one partition (`load-steps-1.lua`). */
export function loadStepsCall(at: readonly StepsRef[]): ScriptCall {
  const n = at.length;
  const keys = new Array<string>(2 * n);
  const argv = new Array<string>(n);
  for (let j = 0; j < n; j += 1) {
    keys[j] = stepsBlockKey(at[j]!);
    keys[n + j] = legacyStepsKey(at[j]!);
    argv[j] = String(at[j]!.offset);
  }
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

interface OutputClaim {
  /** The output's claim key (`outputClaimKey`). */
  readonly key: string;
  readonly runner: string;
  readonly ttlMs: number;
}

/** One call taking the outputs of several records, all under one origin partition's tag (`claim-outputs-0.lua`). */
export function claimOutputsCall(claims: readonly OutputClaim[]): ScriptCall {
  const keys = new Array<string>(claims.length);
  const argv = new Array<string>(claims.length + 1);
  // One time to live per call, the longest asked (the same options give every record of a function the same).
  let ttlMs = 0;
  for (let j = 0; j < claims.length; j += 1) {
    const { key, runner, ttlMs: ttl } = claims[j]!;
    keys[j] = key;
    argv[j + 1] = runner;
    if (ttl > ttlMs) ttlMs = ttl;
  }
  argv[0] = String(Math.ceil(ttlMs));
  return { keys, argv };
}

/** The `claim-outputs-0.lua` reply: per claim, `true` when taken, `false` when another record took it. */
export function parseClaimOutputsReply(reply: unknown, count: number): boolean[] {
  if (!Array.isArray(reply) || reply.length !== count) throw new UnexpectedReplyError(`claimOutputs: unexpected reply ${JSON.stringify(reply)}`);
  return reply.map((one: unknown) => !Array.isArray(one));
}

/**
 * The exactly-once state in the group's Redis, every mutation one script (safe to repeat). Step results are read
 * once per record (its field of a step block) and stored once per step; reads and stores made in one turn of the event
 * loop go as calls of up to `RECORDS_PER_CALL` records per partition, deletes as one call per step block, so the
 * records running at once share their round trips.
 *
 * @example
 * const effects = new RedisEffects(redis);
 * await effects.saveStep({ ref, offset: 41 }, 'charge', '{"id":"ch_1"}', 86_400_000);
 */
export class RedisEffects implements EffectsPort {
  readonly #redis: RedisClient;
  readonly limits: CallLimits;
  readonly #batches: EffectBatches;

  constructor(redis: RedisClient, limits: CallLimits = { timeoutMs: 5_000 }, batches?: EffectBatches) {
    this.#redis = redis;
    this.limits = limits;
    // Shared by every invocation of one store: the batches' calls carry the store's own limits.
    this.#batches = batches ?? {
      loads: new TagBatches(async (at) => {
        const reply = await runScript(redis, 'loadSteps', loadStepsCall(at), limits);
        return parseLoadStepsReply(reply, at.length);
      }, RECORDS_PER_CALL),
      saves: new TagBatches(async (saves) => {
        // One time to live per call, the longest asked (the same options give every record of a function the same).
        let ttlMs = 0;
        for (const save of saves) if (save.ttlMs > ttlMs) ttlMs = save.ttlMs;
        const reply = await runScript(redis, 'saveSteps', saveStepsCall(saves, ttlMs), limits);
        return parseSaveStepsReply(reply, saves.length);
      }, RECORDS_PER_CALL),
      claims: new TagBatches(async (claims) => parseClaimOutputsReply(await runScript(redis, 'claimOutputs', claimOutputsCall(claims), limits), claims.length), RECORDS_PER_CALL),
      used: false,
      probed: new Set(),
    };
  }

  /** The same store with other call limits (an invocation's deadline signal) for its unbatched calls. */
  withLimits(limits: CallLimits): RedisEffects {
    return new RedisEffects(this.#redis, { ...this.limits, ...limits }, this.#batches);
  }

  /**
   * The partition's `stepped` marker. Before any step went through this store it is read once per partition, so
   * the first batch of a new process skips the reads of its records' steps too, while a function without steps
   * pays one read per partition, not one per admission.
   */
  async stepsStoredUpTo(ref: PartitionRef): Promise<number | undefined> {
    if (!this.#batches.used) {
      const tag = partitionTag(ref);
      if (this.#batches.probed.has(tag)) return undefined;
      this.#batches.probed.add(tag);
    }
    const stored = await bounded(this.#redis.get(steppedKey(ref)), 'steps marker read', this.limits);
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

  async forgetSteps(at: readonly StoredSteps[]): Promise<void> {
    // One HDEL per step block: the fields of a block go together, the blocks of one partition share its slot.
    const byTag = new Map<string, { ref: PartitionRef; records: StoredSteps[] }>();
    for (const one of at) {
      const tag = partitionTag(one.ref);
      const partition = byTag.get(tag);
      if (partition === undefined) byTag.set(tag, { ref: one.ref, records: [one] });
      else partition.records.push(one);
    }
    const deletes: Array<Promise<unknown>> = [];
    for (const { ref, records } of byTag.values()) {
      for (const block of stepBlocks(ref, records)) deletes.push(bounded(this.#redis.hdel(block.key, ...block.fields), 'steps delete', this.limits));
    }
    await Promise.all(deletes);
  }

  /** Takes an output of another stage for `runner`; the claims of one turn go as calls per origin partition. */
  claimOutput(group: string, id: OutputId, runner: string, ttlMs: number): Promise<boolean> {
    const tag = outputClaimTag(group, id);
    return this.#batches.claims.add(tag, { key: outputClaimKey(group, id, tag), runner, ttlMs });
  }
}
