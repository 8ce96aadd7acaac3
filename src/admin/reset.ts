import type { CompletionStore } from '../completion/store';
import { partitionOfKey } from '../completion/redis-scan';
import { readPartition, type RedisPartition } from './status';

/**
 * `kafka-lanes reset <group> <topic>`: deletes a topic's completion state (done bits, lanes, park lists,
 * tracked-set entries, the committer's last readings). Needed when a topic is deleted and created again
 * under the same name: its offsets restart below the stored `base`, and every record would be skipped as
 * done. Parked records are deleted with their lanes: they exist nowhere else, so the plan lists them first.
 */

export interface ResetPartition extends RedisPartition {
  readonly partition: number;
  /** Every Redis key of the partition (they share one hash slot). */
  readonly keys: readonly string[];
}

export interface ResetPlan {
  readonly group: string;
  readonly topic: string;
  /** Only this partition; `undefined`: every partition of the topic. */
  readonly partition: number | undefined;
  readonly partitions: readonly ResetPartition[];
  /** Members `<topic>\n<partition>` of the group's tracked-partitions set to remove. */
  readonly trackedMembers: readonly string[];
  /** Fields of the committer's readings hash to remove. */
  readonly readingFields: readonly string[];
}

/**
 * What a reset of `topic` (or one partition of it) would delete; changes nothing.
 *
 * @example
 * const plan = await planReset(store, { group: 'orders-svc', topic: 'orders' });
 * process.stdout.write(renderResetPlan(plan, false));
 */
export async function planReset(
  store: CompletionStore,
  { group, topic, partition }: { group: string; topic: string; partition?: number | undefined },
): Promise<ResetPlan> {
  const byPartition = new Map<number, string[]>();
  const state = store.groupState(group);
  for (const key of await state.partitionKeys(topic, partition)) {
    const ref = partitionOfKey(group, key);
    if (ref === undefined || ref.topic !== topic || (partition !== undefined && ref.partition !== partition)) continue;
    const keys = byPartition.get(ref.partition) ?? [];
    keys.push(key);
    byPartition.set(ref.partition, keys);
  }
  const belongs = (member: string): boolean => {
    const cut = member.lastIndexOf('\n');
    return member.slice(0, cut) === topic && (partition === undefined || member.slice(cut + 1) === String(partition));
  };
  const trackedMembers = (await state.trackedMembers()).filter(belongs).sort();
  const readingFields = (await store.committerState(group).readingFields()).filter(belongs).sort();
  const partitions: ResetPartition[] = [];
  for (const [number, keys] of [...byPartition].sort(([a], [b]) => a - b)) {
    partitions.push({ partition: number, keys: keys.sort(), ...(await readPartition(store, { group, topic, partition: number })) });
  }
  return { group, topic, partition, partitions, trackedMembers, readingFields };
}

/** Deletes what the plan lists; returns the number of keys deleted. */
export async function applyReset(store: CompletionStore, plan: ResetPlan): Promise<number> {
  const state = store.groupState(plan.group);
  let deleted = 0;
  for (const { keys } of plan.partitions) deleted += await state.deletePartitionKeys(keys);
  await state.untrack(plan.trackedMembers);
  await store.committerState(plan.group).dropReadings(plan.readingFields);
  return deleted;
}

/** The plan as a person reads it, before (`applied` false) or after the reset. */
export function renderResetPlan(plan: ResetPlan, applied: boolean): string {
  const what = plan.partition === undefined ? `topic ${plan.topic}` : `partition ${plan.topic}-${plan.partition}`;
  const lines: string[] = [];
  if (plan.partitions.length === 0 && plan.trackedMembers.length === 0 && plan.readingFields.length === 0) {
    return `group ${plan.group} has no completion state for ${what} in Redis: nothing to reset\n`;
  }
  lines.push(`${applied ? 'Deleted' : 'Would delete'} the completion state of group ${plan.group} for ${what}:`);
  for (const p of plan.partitions) {
    const where = p.frontier === undefined ? 'no bitmap' : `frontier ${p.frontier}, highest delivered ${String(p.highest)}`;
    lines.push(
      `  ${plan.topic}-${p.partition}: ${p.keys.length} keys (${where}, ${p.blockedLanes} blocked lanes, ${p.heldLanes} held, ` +
        `${p.parked} parked records)`,
    );
  }
  const parked = plan.partitions.reduce((sum, p) => sum + p.parked, 0);
  if (parked > 0) {
    lines.push(`  ${parked} parked records are kept nowhere else: they are lost ${applied ? '' : 'if you reset '}(they are not done)`);
  }
  if (plan.trackedMembers.length > 0) lines.push(`  ${plan.trackedMembers.length} entries of the tracked-partitions set`);
  if (plan.readingFields.length > 0) lines.push(`  ${plan.readingFields.length} committer readings`);
  if (!applied) lines.push('Nothing was changed. Run again with --yes to delete it (stop the functions of the group first).');
  return `${lines.join('\n')}\n`;
}
