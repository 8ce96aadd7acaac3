/**
 * The exactly-once state (step results, output claims, unordered copy claims) in memory, with the semantics of
 * the effects scripts, and counters of the calls made: one call is one round trip to Redis.
 */
import type { EffectsPort, OutputId, StepsRef, StoredSteps } from '../ports/effects';
import { outputClaimKey, steppedKey, stepsBlockKey } from '../completion/keys';
import type { PartitionRef } from '../ports/partition';
import type { OutputMessage } from '../ports/handoff';

/** Where the model keeps one record's step results: its field of its step block, as the Redis store does. */
export function recordStepsId(at: StepsRef): string {
  return `${stepsBlockKey(at)}#${at.offset}`;
}

export class EffectsModel implements EffectsPort {
  readonly steps = new Map<string, Map<string, string>>();
  readonly claims = new Map<string, string>();
  readonly calls = { stepsStoredUpTo: 0, loadSteps: 0, saveStep: 0, forgetSteps: 0, claimOutput: 0 };
  /** Set to make the next calls fail, as an unreachable Redis would. */
  down = false;

  get roundTrips(): number {
    return Object.values(this.calls).reduce((a, b) => a + b, 0);
  }

  #call(name: keyof EffectsModel['calls']): void {
    this.calls[name] += 1;
    if (this.down) throw new Error('Redis unreachable (model)');
  }

  /** Per partition tag, the highest offset with stored results (the `stepped` marker). */
  readonly stepped = new Map<string, number>();

  /** Partitions whose marker was read before any step was used (once each, as the Redis store does). */
  readonly #probed = new Set<string>();

  async stepsStoredUpTo(ref: PartitionRef): Promise<number | undefined> {
    if (this.calls.loadSteps + this.calls.saveStep === 0) {
      const marker = steppedKey(ref);
      if (this.#probed.has(marker)) return undefined;
      this.#probed.add(marker);
    }
    this.#call('stepsStoredUpTo');
    return this.stepped.get(steppedKey(ref)) ?? -1;
  }

  async loadSteps(at: StepsRef): Promise<ReadonlyMap<string, string>> {
    this.#call('loadSteps');
    return new Map(this.steps.get(recordStepsId(at)) ?? []);
  }

  async saveStep(at: StepsRef, name: string, value: string): Promise<string | undefined> {
    this.#call('saveStep');
    const key = recordStepsId(at);
    let hash = this.steps.get(key);
    if (hash === undefined) this.steps.set(key, (hash = new Map()));
    const marker = steppedKey(at.ref);
    this.stepped.set(marker, Math.max(this.stepped.get(marker) ?? -1, at.offset));
    const stored = hash.get(name);
    if (stored !== undefined) return stored;
    hash.set(name, value);
    return undefined;
  }

  async forgetSteps(at: readonly StoredSteps[]): Promise<void> {
    this.#call('forgetSteps');
    for (const one of at) this.steps.delete(recordStepsId(one));
  }

  async claimOutput(group: string, id: OutputId, runner: string): Promise<boolean> {
    this.#call('claimOutput');
    const key = outputClaimKey(group, id);
    const taker = this.claims.get(key);
    if (taker !== undefined && taker !== runner) return false;
    this.claims.set(key, runner);
    return true;
  }

  /** The step results stored for one record. */
  stepsOf(at: StepsRef): ReadonlyMap<string, string> | undefined {
    return this.steps.get(recordStepsId(at));
  }
}

/**
 * Outputs as a broker would keep them: every send acknowledged, or failed while `failing`; a record with an output to
 * one of `missingTopics` is not acknowledged (its other outputs are not written), the others are.
 */
export class OutputLog {
  readonly sent: OutputMessage[] = [];
  failing = false;
  readonly missingTopics = new Set<string>();

  async send(records: ReadonlyArray<readonly OutputMessage[]>): Promise<ReadonlyArray<Error | undefined>> {
    if (this.failing) throw new Error('broker unreachable (model)');
    return records.map((outputs) => {
      const missing = outputs.find((output) => this.missingTopics.has(output.topic));
      if (missing !== undefined) return new Error(`UNKNOWN_TOPIC_OR_PARTITION (model): \`${missing.topic}\``);
      this.sent.push(...outputs);
      return undefined;
    });
  }
}
