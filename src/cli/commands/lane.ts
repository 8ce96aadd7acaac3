import type { Command } from 'commander';
import { ConfigError } from '../../errors';
import { releaseHeldLane } from '../../operations/lanes';
import { kafkaOptions, redisOptions } from '../connections';
import { TIERS_OPTION, withOperatorParts, type OperatorFlags } from '../operator-parts';

/** `kafka-lanes lane release <group> <topic> <partition> <lane>`. */
export function registerLane(program: Command): void {
  const lane = program.command('lane').description('Operate one blocked lane of a partition.');
  kafkaOptions(redisOptions(
    lane
      .command('release')
      .description(
        'Skip a held lane head (it is already in the dead-letter topic) and resume the lane in order: its next parked ' +
          'record goes to the first retry tier, due now, with its full attempt budget. A lane whose head is still ' +
          'retrying is not touched.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .argument('<topic>', 'the source topic')
      .argument('<partition>', 'the partition')
      .argument('<lane>', 'the lane id as `status` shows it (base64 of the key bytes in key mode, `*` in partition mode, `~` the shared null-key lane, `#...` a hashed long key)')
      .option(...TIERS_OPTION),
  )).action(async (group: string, topic: string, partitionText: string, laneId: string, flags: OperatorFlags) => {
    const partition = Number(partitionText);
    if (!/^[0-9]+$/.test(partitionText) || !Number.isSafeInteger(partition)) {
      throw new ConfigError(`Expected \`<partition>\` to be a non-negative integer, got \`${partitionText}\``);
    }
    await withOperatorParts(group, flags, async (parts) => {
      const { skipped, next } = await releaseHeldLane(parts, { group, topic, partition }, laneId);
      process.stdout.write(
        `lane ${laneId} of ${topic}-${partition}: held head offset ${skipped} skipped (it is in ${group}.dlq); ` +
          (next === undefined ? 'the lane is free\n' : `next head offset ${next} handed to the first retry tier, due now\n`),
      );
    });
  });
}
