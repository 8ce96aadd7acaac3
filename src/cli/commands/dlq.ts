import type { Command } from 'commander';
import { ConfigError } from '../../errors';
import { deadLetterTopic } from '../../options';
import { readDeadLetters, replayDeadLetters } from '../../retry/operator';
import { kafkaOptions, redisOptions } from '../connections';
import { TIERS_OPTION, withOperatorParts, type OperatorFlags } from '../operator-parts';

interface ReplayFlags extends OperatorFlags {
  readonly originTopic?: string;
  readonly lane?: string;
  readonly since?: string;
  readonly dryRun?: boolean;
}

/** `kafka-lanes dlq replay <group>`. */
export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description("Work with a group's dead-letter topic.");
  kafkaOptions(redisOptions(
    dlq
      .command('replay')
      .description(
        'Replay dead letters. A held lane whose head is the dead letter resumes in order: the head runs again as attempt 1. ' +
          'Any other (released) dead letter is written back to its origin topic as a new record with a `lanes-replay-of` ' +
          'header: its order relative to later records of its key is NOT kept. Prints what it did; --dry-run changes nothing.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .option('--origin-topic <topic>', 'only dead letters from this source topic')
      .option('--lane <lane>', 'only dead letters of this lane, as `status` shows it (the `lanes-lane` header of the dead letter)')
      .option('--since <time>', 'only dead letters written at or after this time (ISO 8601, or epoch ms)')
      .option('--dry-run', 'print what would be done, change nothing')
      .option(...TIERS_OPTION),
  )).action(async (group: string, flags: ReplayFlags) => {
    let since: number | undefined;
    if (flags.since !== undefined) {
      since = /^[0-9]+$/.test(flags.since) ? Number(flags.since) : Date.parse(flags.since);
      if (!Number.isFinite(since)) throw new ConfigError(`Expected \`--since\` to be an ISO 8601 time or epoch ms, got \`${flags.since}\``);
    }
    await withOperatorParts(group, flags, async (parts) => {
      const topic = deadLetterTopic(group);
      const admin = parts.kafka.admin();
      await admin.connect();
      const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
      const consumer = parts.kafka.consumer({ groupId: `kafka-lanes-cli-replay-${process.pid}-${Date.now()}`, maxWaitTimeInMs: 200 });
      await consumer.connect();
      const letters = await readDeadLetters(consumer, topic, ends.map((e) => ({ partition: e.partition, high: e.high, low: e.low })))
        .finally(() => consumer.disconnect());
      const actions = await replayDeadLetters(parts, letters, {
        ...(flags.originTopic === undefined ? {} : { originTopic: flags.originTopic }),
        ...(flags.lane === undefined ? {} : { lane: flags.lane }),
        ...(since === undefined ? {} : { sinceMs: since }),
      }, parts.producer, flags.dryRun === true);
      for (const a of actions) {
        process.stdout.write(`${topic}-${a.deadLetter.partition}@${a.deadLetter.offset} (origin ${a.origin.topic}-${a.origin.partition}@${a.origin.offset ?? '?'}): ${a.action}: ${a.detail}\n`);
      }
      process.stdout.write(`${flags.dryRun === true ? 'dry run: nothing changed; ' : ''}${actions.length} dead letter(s) matched of ${letters.length}\n`);
    });
  });
}
