import type { Command } from 'commander';
import { MemberlessOffsetCommitter, runCommitter } from '../../committer';
import { ConfigError } from '../../errors';
import { recoveryStart } from '../../durability/first-minute';
import { decodeMarker } from '../../durability/marker';
import { recoverPartition, type Recovered } from '../../recovery/recover';
import { kafkaOptions, redisOptions } from '../connections';
import { TIERS_OPTION, withOperatorParts, type OperatorFlags } from '../operator-parts';

interface RecoverFlags extends OperatorFlags {
  readonly partition?: string[];
}

function describeRecovered(r: Recovered): string {
  return `offsets ${r.from}..${r.to - 1} read again from Kafka: ${r.records} records, ${r.lanes} lanes rebuilt (each head to the retry path, ` +
    `the rest parked behind it), ${r.independent} independent records to the first retry tier`;
}

function parsePartition(text: string): { topic: string; partition: number } {
  const cut = text.lastIndexOf(':');
  const partition = Number(text.slice(cut + 1));
  if (cut < 1 || !/^[0-9]+$/.test(text.slice(cut + 1)) || !Number.isSafeInteger(partition)) {
    throw new ConfigError(`Expected \`--partition\` as <topic>:<partition>, got \`${text}\``);
  }
  return { topic: text.slice(0, cut), partition };
}

/** `kafka-lanes recover <group>`: what the committer does after a Redis loss, by hand, printed. */
export function registerRecover(program: Command): void {
  kafkaOptions(redisOptions(
    program
      .command('recover')
      .description(
        'Find partitions whose Redis state was lost (compared with the marker the committer keeps in <group>.lanes) and ' +
          'recover them: the records from the durable frontier to the end of the partition are read again from Kafka and go ' +
          'through the retry path again, in order per lane (records that had finished run again). Then commits, as a ' +
          'committer run does. --partition recovers a partition even when no loss is found (Redis restored from an old ' +
          'snapshot). Prints what it did.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .option('--partition <topic:partition...>', 'recover this partition whatever the checks say (repeatable)')
      .option(...TIERS_OPTION),
  )).action(async (group: string, flags: RecoverFlags) => {
    const forced = (flags.partition ?? []).map(parsePartition);
    let handedOff = 0;
    await withOperatorParts(group, flags, async (parts) => {
      const committer = new MemberlessOffsetCommitter(parts.kafka, group);
      const recoveryParts = { store: parts.store, kafka: parts.kafka, options: parts.options, sink: parts.sink };
      if (forced.length > 0) {
        const committed = await committer.fetchCommitted([...new Set(forced.map((f) => f.topic))]);
        for (const { topic, partition } of forced) {
          const entry = committed.find((c) => c.topic === topic && c.partition === partition);
          const durable = { committed: entry?.offset, marker: decodeMarker(entry?.metadata) };
          // No commit here: the committer run below commits, under its lease.
          const { recovered } = await recoverPartition({ parts: recoveryParts, ref: { group, topic, partition }, durable, start: recoveryStart(durable, undefined) });
          process.stdout.write(`${topic}-${partition}: recovered by request: ${describeRecovered(recovered)}\n`);
          handedOff += recovered.heads;
        }
      }
      const result = await runCommitter({
        store: parts.store, group, committer,
        redrive: { store: parts.store, options: parts.options, sink: parts.sink },
        recovery: { parts: recoveryParts },
      });
      if (result.skipped !== undefined) {
        throw new ConfigError(`a committer run of ${group} holds the lease now; run \`kafka-lanes recover\` again in a minute`);
      }
      for (const loss of result.losses ?? []) {
        process.stdout.write(`${loss.topic}-${loss.partition}: ${loss.reason} (${loss.detail}): ` +
          (loss.recovered !== undefined ? `recovered: ${describeRecovered(loss.recovered)}\n` : `NOT recovered: ${loss.error ?? 'no recovery'}\n`));
      }
      if ((result.losses ?? []).length === 0 && forced.length === 0) process.stdout.write(`no loss found in ${result.partitions.length} partition(s) of ${group}\n`);
      handedOff += (result.losses ?? []).reduce((n, loss) => n + (loss.recovered?.heads ?? 0), 0) + (result.redriven?.length ?? 0);
      process.stdout.write(`lane heads handed to the retry path: ${handedOff}; commits: ${result.moves.map((m) => `${m.topic}-${m.partition} ${String(m.from)} -> ${m.to}`).join(', ') || 'none'}\n`);
    });
  });
}
