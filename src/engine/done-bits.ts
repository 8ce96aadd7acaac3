import type { Logger } from '@aws-lambda-powertools/logger';
import type { PartitionRef } from '../ports/partition';
import { topicPartitionKey } from '../event';
import type { EffectsPort, StoredSteps, RecordSteps } from '../ports/effects';
import type { CompletionPort } from '../ports/completion';
import { describeError } from '../lanes/outcome';

/**
 * A partition's pending done bits are flushed at once when this many wait, not only every `flushIntervalMs`:
 * the frontier moves sooner, and the call at the end of an invocation stays small instead of carrying a whole
 * batch's bits while the invocation waits for it.
 */
export const FLUSH_AT = 4_096;

/**
 * The done bits of one invocation waiting to be sent: one `mark` call per partition and flush, never one
 * round trip per record, and flushes never overlap.
 *
 * @example
 * const bits = new DoneBits(store, (ref, offsets, error) => redeliver(ref, offsets, error));
 * bits.add(ref, 41);
 * await bits.flush();
 */
export class DoneBits {
  readonly #store: CompletionPort;
  /** Offsets whose bits could not be recorded: finished, but they must run again. */
  readonly #lost: (ref: PartitionRef, offsets: readonly number[], error: unknown) => void;
  readonly #pending = new Map<string, { ref: PartitionRef; offsets: number[] }>();
  /**
   * Bits set again as a repair (a retry copy's origin, set at its hand-off already): one that cannot be stored is not
   * a record to redeliver (its origin is in no event of this invocation), e.g. when Redis lost the origin's state.
   */
  readonly #again = new Map<string, { ref: PartitionRef; offsets: number[] }>();
  #last: { ref: PartitionRef; offsets: number[] } | undefined = undefined;
  #flushing: Promise<void> = Promise.resolve();
  /** Deletes step results of terminal records; called only after their done bits are stored. */
  readonly #forgetSteps: ((steps: StoredSteps[]) => Promise<void>) | undefined;
  /** Step results of records found terminal, deleted once their done bits are flushed. */
  #forget: StoredSteps[] = [];
  /** Told when bits set again as a repair could not be stored (logged, not redelivered). */
  readonly #repairFailed: ((ref: PartitionRef, offsets: readonly number[], error: unknown) => void) | undefined;

  constructor(
    store: CompletionPort,
    lost: (ref: PartitionRef, offsets: readonly number[], error: unknown) => void,
    forgetSteps?: (steps: StoredSteps[]) => Promise<void>,
    repairFailed?: (ref: PartitionRef, offsets: readonly number[], error: unknown) => void,
  ) {
    this.#store = store;
    this.#repairFailed = repairFailed;
    this.#lost = lost;
    this.#forgetSteps = forgetSteps;
  }

  /** A terminal record used steps: their results go after the flush that stores its done bit. */
  forget(steps: StoredSteps): void {
    if (this.#forgetSteps !== undefined) this.#forget.push(steps);
  }

  add(ref: PartitionRef, offset: number, again = false): void {
    if (again) {
      const key = topicPartitionKey(ref.topic, ref.partition);
      const pending = this.#again.get(key) ?? { ref, offsets: [] };
      this.#again.set(key, pending);
      pending.offsets.push(offset);
      return;
    }
    // The same ref object comes again and again (a partition's tasks share it): skip the key then.
    if (ref === this.#last?.ref) {
      if (this.#last.offsets.push(offset) === FLUSH_AT) void this.flush();
      return;
    }
    const key = topicPartitionKey(ref.topic, ref.partition);
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = { ref, offsets: [] };
      this.#pending.set(key, pending);
    }
    this.#last = pending.ref === ref ? pending : undefined;
    if (pending.offsets.push(offset) === FLUSH_AT) void this.flush();
  }

  /** Sends pending done bits, one script call per partition. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const batches = [...this.#pending.values()].filter((p) => p.offsets.length > 0).map((p) => ({ ref: p.ref, offsets: p.offsets.splice(0) }));
      const again = [...this.#again.values()].filter((p) => p.offsets.length > 0).map((p) => ({ ref: p.ref, offsets: p.offsets.splice(0).sort((a, b) => a - b) }));
      let forget = this.#forget.splice(0);
      // Step results of records whose bits this flush sets go in the same call as the bits, where the store can.
      const riding = forget.length > 0 && this.#store.forgetsSteps === true ? ridingSteps(batches, forget) : undefined;
      if (riding !== undefined) forget = riding.rest;
      let allMarked = true;
      await Promise.all([
        ...batches.map(async ({ ref, offsets }, i) => {
          try {
            const steps = riding?.steps[i];
            await (steps === undefined ? this.#store.markDone(ref, offsets) : this.#store.markDone(ref, offsets, 0, steps));
          } catch (error) {
            allMarked = false;
            this.#lost(ref, offsets, error);
          }
        }),
        ...again.map(async ({ ref, offsets }) => {
          await this.#store.markDone(ref, offsets).catch((error: unknown) => {
            allMarked = false;
            this.#repairFailed?.(ref, offsets, error);
          });
        }),
      ]);
      // A redelivery of a record whose bit was not stored must still find its step results.
      if (forget.length > 0 && allMarked && this.#forgetSteps !== undefined) await this.#forgetSteps(forget);
    });
    return this.#flushing;
  }
}

/**
 * An invocation's done bits on its store: bits not stored are reported for redelivery (`lost`), step results of
 * terminal records go once their bits are stored, and what cannot be deleted or repaired is logged.
 */
export function invocationDoneBits(
  store: CompletionPort,
  effects: EffectsPort | undefined,
  logger: Logger,
  lost: (ref: PartitionRef, offsets: readonly number[], error: unknown) => void,
): DoneBits {
  // Step results go only once their records' done bits are stored: a redelivery before that still finds them.
  const forgetSteps = effects === undefined ? undefined : (steps: StoredSteps[]): Promise<void> => effects.forgetSteps(steps).catch((error: unknown) => {
    logger.warn('step results of terminal records not deleted: they expire on their own', { count: steps.length, error: describeError(error) });
  });
  return new DoneBits(store, lost, forgetSteps, (ref, offsets, error) => {
    logger.warn('done bits set again as a repair not stored (the origin partition has no state: the committer deals with a loss)', {
      partition: topicPartitionKey(ref.topic, ref.partition), offsets: offsets.slice(0, 20), error: describeError(error),
    });
  });
}

/**
 * Splits step results to delete: those of records whose done bits a batch sets and whose steps live under that
 * batch's partition (a source record's own) go with it (`steps[i]` for `batches[i]`); the rest (a retry copy's,
 * under its origin's partition) are deleted on their own once every bit is stored.
 */
function ridingSteps(
  batches: ReadonlyArray<{ ref: PartitionRef; offsets: readonly number[] }>,
  forget: readonly StoredSteps[],
): { steps: Array<RecordSteps[] | undefined>; rest: StoredSteps[] } {
  const steps: Array<RecordSteps[] | undefined> = batches.map(() => undefined);
  const rest: StoredSteps[] = [];
  const marking = batches.map(({ offsets }) => new Set(offsets));
  for (const one of forget) {
    const i = batches.findIndex(({ ref }) => ref === one.ref || (ref.group === one.ref.group && ref.topic === one.ref.topic && ref.partition === one.ref.partition));
    if (i >= 0 && marking[i]!.has(one.offset)) (steps[i] ??= []).push(one);
    else rest.push(one);
  }
  return { steps, rest };
}
