import type { Command } from 'commander';
import { readStatus, renderStatus } from '../../admin';
import { sleep } from '../../deadline';
import { ConfigError } from '../../errors';
import { kafkaOptions, redisOptions, withAdmin, withStore, type KafkaFlags, type RedisFlags } from '../connections';

interface StatusFlags extends KafkaFlags, RedisFlags {
  readonly json?: boolean;
  readonly watch?: boolean;
  readonly interval: string;
  readonly lanes: string;
}

/** `kafka-lanes status <group>`. */
export function registerStatus(program: Command): void {
  redisOptions(
    kafkaOptions(
      program
        .command('status')
        .description(
          'Show every partition of a group (source, retry and dead-letter topics): what <group>.lanes has committed, ' +
            'the frontier, the window above it, the end offset and lag, blocked and held lanes, parked records; then ' +
            'the retry depth and the dead letters; then each blocked or held lane (its id for `lane release` and ' +
            '`dlq replay --lane`, key, partition, head offset, attempt, parked records, age, reason).',
        )
        .argument('<group>', 'the consumer group of the handler')
        .option('--json', 'print JSON for scripts (one object per reading)')
        .option('--watch', 'read again every --interval seconds until Ctrl-C')
        .option('--interval <seconds>', 'seconds between readings with --watch', '2')
        .option('--lanes <n>', 'list at most this many blocked and held lanes, the oldest first (0: counts only)', '50'),
    ),
  ).action(async (group: string, flags: StatusFlags) => {
    const intervalMs = Number(flags.interval) * 1000;
    if (!(intervalMs > 0)) throw new ConfigError(`Expected \`--interval\` to be a positive number of seconds, got \`${flags.interval}\``);
    const lanesLimit = Number(flags.lanes);
    if (!/^[0-9]+$/.test(flags.lanes) || !Number.isSafeInteger(lanesLimit)) throw new ConfigError(`Expected \`--lanes\` to be a non-negative integer, got \`${flags.lanes}\``);
    await withAdmin(group, flags, (admin) =>
      withStore(group, flags, async (store) => {
        const stop = new AbortController();
        const onSignal = (): void => stop.abort();
        process.once('SIGINT', onSignal);
        try {
          do {
            const status = await readStatus({ group, admin, store, ...(lanesLimit === 0 ? {} : { lanes: { limit: lanesLimit } }) });
            if (flags.json === true) process.stdout.write(`${JSON.stringify(status, null, flags.watch === true ? undefined : 2)}\n`);
            else process.stdout.write(`${flags.watch === true && process.stdout.isTTY ? '\x1b[2J\x1b[H' : ''}${renderStatus(status)}`);
            if (flags.watch === true) await sleep(intervalMs, stop.signal);
          } while (flags.watch === true && !stop.signal.aborted);
        } finally {
          process.off('SIGINT', onSignal);
        }
      }),
    );
  });
}
