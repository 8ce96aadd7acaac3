import type { Command } from 'commander';
import { applyReset, planReset, renderResetPlan } from '../../admin';
import { ConfigError } from '../../errors';
import { redisOptions, withStore, type RedisFlags } from '../connections';

interface ResetFlags extends RedisFlags {
  readonly partition?: string;
  readonly yes?: boolean;
}

/** `kafka-lanes reset <group> <topic>`. */
export function registerReset(program: Command): void {
  redisOptions(
    program
      .command('reset')
      .description(
        "Delete a topic's completion state of a group in Redis (done bits, blocked lanes, parked records, tracked " +
          'entries) after printing what it would delete; without --yes nothing changes. Run it when a topic was deleted ' +
          'and created again under the same name: its offsets restart below the stored base, and every record would be ' +
          'skipped as done. Parked records exist only in Redis and are lost. Stop the functions of the group first.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .argument('<topic>', 'the topic whose state to delete')
      .option('--partition <p>', 'only this partition')
      .option('--yes', 'delete it (without: only print what would be deleted)'),
  ).action(async (group: string, topic: string, flags: ResetFlags) => {
    const partition = flags.partition === undefined ? undefined : Number(flags.partition);
    if (partition !== undefined && (!/^[0-9]+$/.test(flags.partition ?? '') || !Number.isSafeInteger(partition))) {
      throw new ConfigError(`Expected \`--partition\` to be a non-negative integer, got \`${flags.partition}\``);
    }
    await withStore(group, flags, async (store) => {
      const plan = await planReset(store, { group, topic, partition });
      if (flags.yes !== true) {
        process.stdout.write(renderResetPlan(plan, false));
        return;
      }
      await applyReset(store, plan);
      process.stdout.write(renderResetPlan(plan, true));
    });
  });
}
