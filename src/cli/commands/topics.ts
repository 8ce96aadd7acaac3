import { Command, Option } from 'commander';
import { ensureTopics, formatMs, parseTopicRequest, TOPICS_DEFAULTS, type TopicAction, type TopicRequest } from '../../admin';
import { ConfigError } from '../../errors';
import { DEFAULTS } from '../../options';
import { kafkaOptions, withAdmin, type KafkaFlags } from '../connections';

interface EnsureFlags extends KafkaFlags {
  readonly group: string;
  readonly topic: TopicRequest[];
  readonly output?: TopicRequest[];
  readonly tiers: string;
  readonly retryPartitions?: number;
  readonly retentionMs?: number;
  readonly replicationFactor?: number;
}

function positiveInteger(flag: string): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
      throw new ConfigError(`Expected \`${flag}\` to be a positive integer, got \`${text}\``);
    }
    return value;
  };
}

function describeAction(action: TopicAction): string {
  switch (action.kind) {
    case 'create': {
      const config = Object.entries(action.config).map(([name, value]) => `${name}=${value}`).join(', ');
      return `created  ${action.topic} (${action.role}, ${action.partitions} partitions${config === '' ? '' : `, ${config}`})`;
    }
    case 'add-partitions':
      return `grown    ${action.topic} (${action.role}, ${action.from} -> ${action.to} partitions)`;
    case 'ok':
      return `checked  ${action.topic} (${action.role}, ${action.partitions} partitions)`;
  }
}

/** `kafka-lanes topics ensure`. */
export function registerTopics(program: Command): void {
  const topics = program.command('topics').description("Create or check a group's source, retry, dead-letter and output topics.");
  kafkaOptions(
    topics
      .command('ensure')
      .description(
        'Create the source topics that are missing (or grow them to the partitions asked for), and the retry topics ' +
          '<group>.retry.<tier> and dead-letter topic <group>.dlq. Checks that existing retry and dead-letter topics ' +
          'keep records longer than the longest retry delay plus an hour, do not compact, and accept a copy of the ' +
          'largest source record plus its lanes-* headers; any problem is an error and nothing is changed.',
      )
      .requiredOption('--group <group>', 'the consumer group of the handler (retry and dead-letter topics derive from it)')
      .addOption(
        new Option('--topic <name[:partitions]>', 'a source topic; with :<partitions> it is created or grown to that count (repeatable)')
          .argParser((text: string, previous: TopicRequest[] | undefined) => [...(previous ?? []), parseTopicRequest(text)])
          .makeOptionMandatory(),
      )
      .addOption(
        new Option('--output <name[:partitions]>', 'an output topic the handler writes with ctx.send; created when missing (repeatable)').argParser(
          (text: string, previous: TopicRequest[] | undefined) => [...(previous ?? []), parseTopicRequest(text, '--output')],
        ),
      )
      .option('--tiers <list>', 'retry tiers, ascending durations', DEFAULTS.retry.tiers.join(','))
      .option('--retry-partitions <n>', 'partitions of created retry and dead-letter topics (default: the most of any source)', positiveInteger('--retry-partitions'))
      .option(
        '--retention-ms <ms>',
        `retention.ms of created retry and dead-letter topics (default ${formatMs(TOPICS_DEFAULTS.retentionMs)})`,
        positiveInteger('--retention-ms'),
      )
      .option('--replication-factor <n>', "of created topics (default: the broker's default.replication.factor)", positiveInteger('--replication-factor')),
  ).action(async (flags: EnsureFlags) => {
    const tiers = flags.tiers.split(',').map((tier) => tier.trim()).filter((tier) => tier !== '');
    const result = await withAdmin(flags.group, flags, (admin) =>
      ensureTopics(admin, {
        group: flags.group,
        topics: flags.topic,
        ...(flags.output === undefined ? {} : { outputs: flags.output }),
        tiers,
        ...(flags.retryPartitions === undefined ? {} : { retryPartitions: flags.retryPartitions }),
        ...(flags.retentionMs === undefined ? {} : { retentionMs: flags.retentionMs }),
        ...(flags.replicationFactor === undefined ? {} : { replicationFactor: flags.replicationFactor }),
      }),
    );
    process.stdout.write(`${result.actions.map(describeAction).join('\n')}\n`);
  });
}
