import type { Command } from 'commander';
import type { Kafka } from 'kafkajs';
import { DeadLetterLog, deadLetterRow, type DeadLetterRow } from '../../dashboard/dead-letters';
import { ConfigError } from '../../errors';
import { deadLetterTopic } from '../../options';
import { readDeadLetters, replayDeadLetters, type DeadLetter } from '../../operations/dead-letters';
import { kafkaOptions, redisOptions, withKafka, type KafkaFlags } from '../connections';
import { TIERS_OPTION, withOperatorParts, type OperatorFlags } from '../operator-parts';

interface ReplayFlags extends OperatorFlags {
  readonly originTopic?: string;
  readonly lane?: string;
  readonly position?: string;
  readonly since?: string;
  readonly dryRun?: boolean;
}

interface ListFlags extends KafkaFlags {
  readonly key?: string;
  readonly reason?: string;
  readonly originTopic?: string;
  readonly lane?: string;
  readonly since?: string;
  readonly until?: string;
  readonly limit: string;
  readonly json?: boolean;
}

/** `--since` / `--until`: ISO 8601 or epoch ms. */
function parseTime(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^[0-9]+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new ConfigError(`Expected \`${flag}\` to be an ISO 8601 time or epoch ms, got \`${text}\``);
  return ms;
}

/**
 * A dead letter's position in the dead-letter topic, `<partition>@<offset>` as `dlq list` prints it (a bare offset:
 * partition 0).
 *
 * @throws ConfigError when it is neither.
 * @example
 * parsePosition('2@41'); // { partition: 2, offset: 41 }
 */
export function parsePosition(text: string): { partition: number; offset: number } {
  const match = /^(?:([0-9]+)@)?([0-9]+)$/.exec(text);
  const partition = Number(match?.[1] ?? 0);
  const offset = Number(match?.[2]);
  if (match === null || !Number.isSafeInteger(partition) || !Number.isSafeInteger(offset)) {
    throw new ConfigError(`Expected \`--position <partition>@<offset>\` as \`dlq list\` prints it (e.g. \`0@41\`), got \`${text}\``);
  }
  return { partition, offset };
}

/** Every dead letter of the group, up to the topic's end when called. */
async function readGroupDeadLetters(kafka: Kafka, group: string): Promise<DeadLetter[]> {
  const topic = deadLetterTopic(group);
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const groupId = `kafka-lanes-cli-dlq-${process.pid}-${Date.now()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  await consumer.connect();
  try {
    return await readDeadLetters(consumer, topic, ends.map((e) => ({ partition: e.partition, high: e.high, low: e.low })));
  } finally {
    await consumer.disconnect();
    // It committed nothing; deleting its group keeps the cluster's group list clean.
    const cleanup = kafka.admin();
    await cleanup.connect().then(() => cleanup.deleteGroups([groupId]).catch(() => undefined)).catch(() => undefined);
    await cleanup.disconnect().catch(() => undefined);
  }
}

const COLUMNS: ReadonlyArray<[string, (row: DeadLetterRow) => string]> = [
  ['POSITION', (row) => `${row.partition}@${row.offset}`],
  ['TIME', (row) => new Date(row.timeMs).toISOString()],
  ['REASON', (row) => row.reason],
  ['KEY', (row) => (row.key === '' ? '-' : row.key)],
  ['ORIGIN', (row) => `${row.origin.topic}-${row.origin.partition}@${row.origin.offset ?? '?'}`],
  ['ATTEMPT', (row) => (row.attempt === undefined ? '-' : String(row.attempt))],
  ['ERROR', (row) => row.error],
];

/**
 * Dead letters as a table: the position `dlq replay --position` takes, when, why, the key, where the record came
 * from, its attempts and the error.
 */
export function renderDeadLetters(rows: readonly DeadLetterRow[], total: number, topic: string): string {
  const table = [COLUMNS.map(([title]) => title), ...rows.map((row) => COLUMNS.map(([, cell]) => cell(row)))];
  const widths = COLUMNS.map((_, column) => Math.max(...table.map((line) => line[column]?.length ?? 0)));
  const lines = rows.length === 0 ? [] : table.map((line) => line.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd());
  return `${[...lines, `${rows.length} of ${total} matching dead letter(s) in ${topic}, the newest first`].join('\n')}\n`;
}

/** `kafka-lanes dlq list <group>`, `kafka-lanes dlq replay <group>`. */
export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description("Work with a group's dead-letter topic.");
  kafkaOptions(
    dlq
      .command('list')
      .description(
        'List dead letters, the newest first: position (for `dlq replay --position`), time, reason, key, origin ' +
          '(topic-partition@offset), attempts and the error class and message. Reads the whole topic; changes nothing.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .option('--key <key>', 'only dead letters of this record key')
      .option('--reason <reason>', 'only this reason (attempts-exhausted, non-retriable, schema-validation, malformed, ...)')
      .option('--origin-topic <topic>', 'only dead letters from this source topic')
      .option('--lane <lane>', 'only dead letters of this lane, as `status` shows it')
      .option('--since <time>', 'only dead letters written at or after this time (ISO 8601, or epoch ms)')
      .option('--until <time>', 'only dead letters written before this time (ISO 8601, or epoch ms)')
      .option('--limit <n>', 'list at most this many', '50')
      .option('--json', 'print JSON for scripts: { total, rows }'),
  ).action(listDeadLetters);

  kafkaOptions(redisOptions(
    dlq
      .command('replay')
      .description(
        'Replay dead letters. A held lane whose head is the dead letter resumes in order: the head runs again as attempt 1. ' +
          'Any other (released) dead letter is written back to its origin topic as a new record with a `lanes-replay-of` ' +
          'header: its order relative to later records of its key is NOT kept. Prints what it did; --dry-run prints what ' +
          'it would do and changes nothing.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .option('--position <partition@offset>', 'only this dead letter, at its position in the dead-letter topic as `dlq list` prints it')
      .option('--origin-topic <topic>', 'only dead letters from this source topic')
      .option('--lane <lane>', 'only dead letters of this lane, as `status` shows it (the lane its `lanes-copy` header names)')
      .option('--since <time>', 'only dead letters written at or after this time (ISO 8601, or epoch ms)')
      .option('--dry-run', 'print what would be done, change nothing')
      .option(...TIERS_OPTION),
  )).action(replayDeadLetterTopic);
}

/** `dlq list`: the group's dead letters, filtered, the newest first, as a table or JSON. */
async function listDeadLetters(group: string, flags: ListFlags): Promise<void> {
  const limit = Number(flags.limit);
  if (!/^[0-9]+$/.test(flags.limit) || !Number.isSafeInteger(limit)) throw new ConfigError(`Expected \`--limit\` to be a non-negative integer, got \`${flags.limit}\``);
  const sinceMs = parseTime(flags.since, '--since');
  const untilMs = parseTime(flags.until, '--until');
  const letters = await withKafka(group, flags, (kafka) => readGroupDeadLetters(kafka, group));
  const log = new DeadLetterLog(Math.max(letters.length, 1));
  for (const letter of letters) log.add(letter);
  const page = log.page({
    ...(flags.key === undefined ? {} : { key: flags.key }),
    ...(flags.reason === undefined ? {} : { reason: flags.reason }),
    ...(flags.originTopic === undefined ? {} : { originTopic: flags.originTopic }),
    ...(flags.lane === undefined ? {} : { lane: flags.lane }),
    ...(sinceMs === undefined ? {} : { sinceMs }),
    ...(untilMs === undefined ? {} : { untilMs }),
    limit,
  });
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ total: page.total, rows: page.rows }, null, 2)}\n`);
  else process.stdout.write(renderDeadLetters(page.rows, page.total, deadLetterTopic(group)));
}

/** `dlq replay`: each matching dead letter resumed in its held lane or written back to its origin topic. */
async function replayDeadLetterTopic(group: string, flags: ReplayFlags): Promise<void> {
  const since = parseTime(flags.since, '--since');
  const position = flags.position === undefined ? undefined : parsePosition(flags.position);
  await withOperatorParts(group, flags, async (parts) => {
    const topic = deadLetterTopic(group);
    const letters = await readGroupDeadLetters(parts.kafka, group);
    const dryRun = flags.dryRun === true;
    const actions = await replayDeadLetters(parts, letters, {
      ...(position === undefined ? {} : { position }),
      ...(flags.originTopic === undefined ? {} : { originTopic: flags.originTopic }),
      ...(flags.lane === undefined ? {} : { lane: flags.lane }),
      ...(since === undefined ? {} : { sinceMs: since }),
      dryRun,
    });
    const rows = new Map(letters.map((letter) => [`${letter.record.partition}@${letter.record.offset}`, deadLetterRow(letter)]));
    for (const a of actions) {
      const row = rows.get(`${a.deadLetter.partition}@${a.deadLetter.offset}`);
      const facts = row === undefined ? '' : ` key ${row.key === '' ? '-' : row.key}, ${row.reason}${row.error === '' ? '' : ` (${row.error})`}`;
      process.stdout.write(`${topic} ${a.deadLetter.partition}@${a.deadLetter.offset} (origin ${a.origin.topic}-${a.origin.partition}@${a.origin.offset ?? '?'},${facts}): ${a.action}: ${a.detail}\n`);
    }
    if (position !== undefined && actions.length === 0) throw new ConfigError(`No dead letter at ${position.partition}@${position.offset} of ${topic} (\`dlq list ${group}\` lists them)`);
    process.stdout.write(`${dryRun ? 'dry run, nothing changed: ' : ''}${actions.length} dead letter(s) matched of ${letters.length}\n`);
  });
}
