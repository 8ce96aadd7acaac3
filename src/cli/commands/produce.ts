import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseProduceRecords, produceRecords } from '../../admin/produce';
import { ConfigError } from '../../errors';
import { connectionOptions, connectKafka, kafkaOptions, LOCAL_BROKERS, type KafkaFlags } from '../connections';

interface ProduceFlags extends KafkaFlags {
  readonly key?: string;
  readonly header: string[];
  readonly file?: string;
  readonly raw?: boolean;
  readonly records?: boolean;
  readonly keySeparator?: string;
  readonly partition?: string;
}

/** `kafka-lanes produce <topic> [value...]`. */
export function registerProduce(program: Command): void {
  kafkaOptions(
    program
      .command('produce')
      .description(
        'Write records to a topic with acks=all, through the same connection options as the other commands. Each value ' +
          'argument is one record; with --file, each non-empty line of the file (or of stdin with `--file -`) is one. ' +
          'Values are JSON unless --raw. Prints where each record landed.',
      )
      .argument('<topic>', 'the topic to write to')
      .argument('[value...]', 'record values, e.g. \'{"orderId":"o-1","amount":30}\'')
      .option('--key <key>', 'the key of every record (default: none)')
      .option('--header <name=value>', 'a header of every record; repeat for more', (value: string, all: string[]) => [...all, value], [])
      .option('--file <path>', 'read one record per line from a file, or `-` for stdin')
      .option('--key-separator <text>', 'each line or value is `<key><text><value>`, e.g. `--key-separator :` for `c-1:{"orderId":"o-1"}`')
      .option('--raw', 'write each value as its text, not checked as JSON')
      .option('--records', 'each line or value is a record object `{"key":"c-1","value":{...},"headers":{"trace":"abc"},"partition":0}`')
      .option('--partition <n>', 'write to this partition (default: by key, as the Java client partitions)'),
  ).action(async (topic: string, values: string[], flags: ProduceFlags) => {
    if (flags.raw === true && flags.records === true) throw new ConfigError('Expected `--raw` or `--records`, got both');
    let partition: number | undefined;
    if (flags.partition !== undefined) {
      partition = Number(flags.partition);
      if (!/^[0-9]+$/.test(flags.partition) || !Number.isSafeInteger(partition)) {
        throw new ConfigError(`Expected \`--partition\` to be a non-negative integer, got \`${flags.partition}\``);
      }
    }
    const lines = flags.file === undefined ? undefined : flags.file === '-' ? await readStdin() : await readFile(flags.file, 'utf8');
    const records = parseProduceRecords({
      values,
      ...(lines === undefined ? {} : { lines, source: flags.file === '-' ? 'stdin' : flags.file }),
      format: flags.raw === true ? 'raw' : flags.records === true ? 'records' : 'json',
      ...(flags.key === undefined ? {} : { key: flags.key }),
      ...(flags.keySeparator === undefined ? {} : { keySeparator: flags.keySeparator }),
      headers: flags.header,
      ...(partition === undefined ? {} : { partition }),
    });
    // The group only scopes option messages here: producing touches no group.
    const { kafka } = connectionOptions('kafka-lanes-cli', flags);
    const produced = await connectKafka(kafka, () => produceRecords(kafka, topic, records, LOCAL_BROKERS));
    for (const record of produced) process.stdout.write(`${record.topic}-${record.partition}@${record.offset}${record.key === null ? '' : ` key ${record.key}`}\n`);
    process.stdout.write(`${produced.length} record(s) written to ${topic} (acks=all)\n`);
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
