import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { encodeThroughRegistry, parseProduceRecords, produceRecords, type RegistryWrite } from '../../admin/produce';
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
  readonly valueFormat?: string;
  readonly valueSchema?: string;
  readonly schemaRegistry?: string;
  readonly subject?: string;
  readonly messageType?: string;
}

const VALUE_FORMATS = ['avro', 'protobuf', 'json-schema'] as const;
/** The flags that only mean something with `--value-format`. */
const FORMAT_FLAGS = { valueSchema: '--value-schema', schemaRegistry: '--schema-registry', subject: '--subject', messageType: '--message-type' } as const;

/** The registry write the flags ask for, or undefined; every flag that needs another names it. */
async function registryWrite(topic: string, flags: ProduceFlags): Promise<RegistryWrite | undefined> {
  const needing = Object.entries(FORMAT_FLAGS).filter(([flag]) => flags[flag as keyof typeof FORMAT_FLAGS] !== undefined).map(([, name]) => `\`${name}\``);
  if (flags.valueFormat === undefined) {
    if (needing.length > 0) throw new ConfigError(`Expected \`--value-format avro|protobuf|json-schema\` with ${needing.join(', ')}, got none`);
    return undefined;
  }
  const format = VALUE_FORMATS.find((f) => f === flags.valueFormat);
  if (format === undefined) throw new ConfigError(`Expected \`--value-format\` to be ${VALUE_FORMATS.join(', ')}, got \`${flags.valueFormat}\``);
  if (flags.raw === true) throw new ConfigError(`Expected JSON values with \`--value-format ${format}\` (encoded through the registry), got \`--raw\``);
  if (flags.valueSchema === undefined || flags.schemaRegistry === undefined) {
    throw new ConfigError(`Expected \`--value-schema <file>\` and \`--schema-registry <url>\` with \`--value-format ${format}\`, got ${flags.valueSchema === undefined ? 'no --value-schema' : 'no --schema-registry'}`);
  }
  return {
    format,
    registry: flags.schemaRegistry,
    subject: flags.subject ?? `${topic}-value`,
    schema: await readFile(flags.valueSchema, 'utf8'),
    ...(flags.messageType === undefined ? {} : { messageType: flags.messageType }),
  };
}

/** `kafka-lanes produce <topic> [value...]`. */
export function registerProduce(program: Command): void {
  kafkaOptions(
    program
      .command('produce')
      .description(
        'Write records to a topic with acks=all, through the same connection options as the other commands. Each value ' +
          'argument is one record; with --file, each non-empty line of the file (or of stdin with `--file -`) is one. ' +
          'Values are JSON unless --raw; with --value-format they are encoded in Confluent\'s wire format through a schema ' +
          'registry (the schema registered under the subject first). Prints where each record landed.',
      )
      .argument('<topic>', 'the topic to write to')
      .argument('[value...]', 'record values, e.g. \'{"orderId":"o-1","amount":30}\'')
      .option('--key <key>', 'the key of every record (default: none)')
      .option('--header <name=value>', 'a header of every record; repeat for more', (value: string, all: string[]) => [...all, value], [])
      .option('--file <path>', 'read one record per line from a file, or `-` for stdin')
      .option('--key-separator <text>', 'each line or value is `<key><text><value>`, e.g. `--key-separator :` for `c-1:{"orderId":"o-1"}`')
      .option('--raw', 'write each value as its text, not checked as JSON')
      .option('--records', 'each line or value is a record object `{"key":"c-1","value":{...},"headers":{"trace":"abc"},"partition":0}`')
      .option('--partition <n>', 'write to this partition (default: by key, as the Java client partitions)')
      .option('--value-format <format>', 'encode each JSON value through a schema registry: avro, protobuf or json-schema')
      .option('--value-schema <file>', 'the schema to write with: an .avsc, a .proto or a JSON Schema file')
      .option('--schema-registry <url>', 'a Confluent-compatible schema registry, e.g. http://127.0.0.1:8081')
      .option('--subject <name>', 'the subject the schema is registered under (default: <topic>-value)')
      .option('--message-type <name>', 'protobuf: the message to write, by full name (default: the file\'s first)'),
  ).action(async (topic: string, values: string[], flags: ProduceFlags) => {
    if (flags.raw === true && flags.records === true) throw new ConfigError('Expected `--raw` or `--records`, got both');
    let partition: number | undefined;
    if (flags.partition !== undefined) {
      partition = Number(flags.partition);
      if (!/^[0-9]+$/.test(flags.partition) || !Number.isSafeInteger(partition)) {
        throw new ConfigError(`Expected \`--partition\` to be a non-negative integer, got \`${flags.partition}\``);
      }
    }
    const write = await registryWrite(topic, flags);
    const lines = flags.file === undefined ? undefined : flags.file === '-' ? await readStdin() : await readFile(flags.file, 'utf8');
    const parsed = parseProduceRecords({
      values,
      ...(lines === undefined ? {} : { lines, source: flags.file === '-' ? 'stdin' : flags.file }),
      format: flags.raw === true ? 'raw' : flags.records === true ? 'records' : 'json',
      ...(flags.key === undefined ? {} : { key: flags.key }),
      ...(flags.keySeparator === undefined ? {} : { keySeparator: flags.keySeparator }),
      headers: flags.header,
      ...(partition === undefined ? {} : { partition }),
    });
    const records = write === undefined ? parsed : await encodeThroughRegistry(parsed, write);
    // The group only scopes option messages here: producing touches no group.
    const { kafka } = connectionOptions('kafka-lanes-cli', flags);
    const produced = await connectKafka(kafka, () => produceRecords(kafka, topic, records, LOCAL_BROKERS));
    for (const record of produced) process.stdout.write(`${record.topic}-${record.partition}@${record.offset}${record.key === null ? '' : ` key ${record.key}`}\n`);
    const through = write === undefined ? '' : `, ${write.format} under subject ${write.subject}`;
    process.stdout.write(`${produced.length} record(s) written to ${topic} (acks=all${through})\n`);
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
