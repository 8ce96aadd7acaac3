import type { Command } from 'commander';
import { startDashboard, type Dashboard } from '../../dashboard';
import { ConfigError } from '../../errors';
import { cliKafka, connectionOptions, kafkaOptions, redisOptions, withAdmin, withStore } from '../connections';
import { TIERS_OPTION, withOperatorParts, type OperatorFlags } from '../operator-parts';

interface DashboardFlags extends OperatorFlags {
  readonly host: string;
  readonly port: string;
  readonly actions?: boolean;
  readonly interval: string;
}

/** `kafka-lanes dashboard <group>`. */
export function registerDashboard(program: Command): void {
  kafkaOptions(
    redisOptions(
      program
        .command('dashboard')
        .description(
          'Serve a live web page of a group: the figures of `status` per partition with lag over time, blocked and held ' +
            'lanes (sortable, paged), retry depth per tier, dead letters per minute and a dead-letter browser. Prints the ' +
            'URL to open, with its access token. Read only unless --actions: then a held lane can be released and dead ' +
            'letters replayed from the page, each confirmed and logged here, as `lane release` and `dlq replay` do.',
        )
        .argument('<group>', 'the consumer group of the handler')
        .option('--host <address>', 'the address to listen on (anything but a loopback address exposes the page to the network)', '127.0.0.1')
        .option('--port <port>', 'the port to listen on (0: any free port)', '0')
        .option('--interval <seconds>', 'seconds between readings', '2')
        .option('--actions', 'allow `lane release` and `dlq replay` from the page')
        .option(...TIERS_OPTION),
    ),
  ).action(async (group: string, flags: DashboardFlags) => {
    const port = Number(flags.port);
    if (!/^[0-9]+$/.test(flags.port) || port > 65_535) throw new ConfigError(`Expected \`--port\` to be a port number from 0 to 65535, got \`${flags.port}\``);
    const readEveryMs = Number(flags.interval) * 1000;
    if (!(readEveryMs >= 200)) throw new ConfigError(`Expected \`--interval\` to be at least 0.2 seconds, got \`${flags.interval}\``);
    const { kafka: kafkaConfig } = connectionOptions(group, flags);
    const kafka = await cliKafka(kafkaConfig, 'kafka-lanes-dashboard');
    const serve = (operator?: Parameters<typeof startDashboard>[0]['operator']): Promise<void> =>
      withAdmin(group, flags, (admin) =>
        withStore(group, flags, async (store) => {
          const dashboard = await startDashboard({ group, admin, store, kafka, host: flags.host, port, readEveryMs, ...(operator === undefined ? {} : { operator }) });
          process.stdout.write(
            `kafka-lanes dashboard of ${group}${operator === undefined ? ' (read only)' : ' (actions on)'}: open ${dashboard.url}\n` +
              'Ctrl-C stops it.\n',
          );
          await untilInterrupted(dashboard);
        }),
      );
    if (flags.actions === true) await withOperatorParts(group, flags, (parts) => serve(parts));
    else await serve();
  });
}

function untilInterrupted(dashboard: Dashboard): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void dashboard.close().then(resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
