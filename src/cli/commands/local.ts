import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { ConfigError, LanesError } from '../../errors';
import { KAFKA_DEFAULT_VERSION } from '../local/files';
import { LOCAL_SERVICES, localDown, localStatus, localUp, type LocalService, type LocalStackConfig } from '../local/stack';

/** The flags of `local up|down|status` (commander's names). */
export interface LocalFlags {
  readonly dir: string;
  readonly kafkaDir?: string;
  readonly kafkaVersion: string;
  readonly kafkaPort: string;
  readonly controllerPort: string;
  readonly redisPort: string;
  readonly cluster?: boolean;
  readonly clusterPorts: string;
  readonly services?: string;
  readonly readyTimeout?: string;
  readonly jars?: boolean;
}

/** Where the local stack keeps its state unless `--dir` says otherwise: in the project it is run from. */
export const LOCAL_DIR = '.kafka-lanes';

function port(flag: string, text: string): number {
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || value < 1 || value > 65535) throw new ConfigError(`Expected \`${flag}\` to be a port (1-65535), got \`${text}\``);
  return value;
}

/**
 * The local stack's configuration from the flags (and the environment variables they fall back to); `cwd` is
 * where relative directories start. Pure.
 *
 * @throws ConfigError naming the flag that is wrong and what was given.
 */
export function localConfig(flags: LocalFlags, cwd: string, env: NodeJS.ProcessEnv = process.env): LocalStackConfig {
  if (!/^[0-9]+\.[0-9]+\.[0-9]+$/.test(flags.kafkaVersion)) {
    throw new ConfigError(`Expected \`--kafka-version\` (or KAFKA_VERSION) to be a released Kafka version like ${KAFKA_DEFAULT_VERSION}, got \`${flags.kafkaVersion}\``);
  }
  const services = new Set<LocalService>();
  if (flags.services === undefined) {
    services.add('kafka').add('redis');
    if (flags.cluster === true) services.add('redis-cluster');
  } else {
    for (const name of flags.services.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')) {
      if (!(LOCAL_SERVICES as readonly string[]).includes(name)) {
        throw new ConfigError(`Expected \`--services\` (or LOCAL_SERVICES) to list ${LOCAL_SERVICES.join(', ')}, got \`${name}\``);
      }
      services.add(name as LocalService);
    }
  }
  const clusterPorts = flags.clusterPorts.split(',').map((entry) => port('--cluster-ports', entry.trim()));
  if (clusterPorts.length < 3) throw new ConfigError(`Expected \`--cluster-ports\` to list at least 3 ports (a cluster needs 3 masters), got \`${flags.clusterPorts}\``);
  const readyTimeout = Number(flags.readyTimeout ?? '90');
  if (!Number.isFinite(readyTimeout) || readyTimeout <= 0) throw new ConfigError(`Expected \`--ready-timeout\` to be a number of seconds, got \`${flags.readyTimeout}\``);
  const kafkaPort = port('--kafka-port', flags.kafkaPort);
  const controllerPort = port('--controller-port', flags.controllerPort);
  if (kafkaPort === controllerPort) throw new ConfigError(`Expected \`--kafka-port\` and \`--controller-port\` to differ, got ${kafkaPort} for both`);
  const dir = resolve(cwd, flags.dir);
  return {
    dir,
    services,
    kafkaVersion: flags.kafkaVersion,
    kafkaPort,
    controllerPort,
    kafkaDir: flags.kafkaDir === undefined ? resolve(dir, 'kafka') : resolve(cwd, flags.kafkaDir),
    redisPort: port('--redis-port', flags.redisPort),
    clusterPorts,
    readyTimeoutMs: readyTimeout * 1000,
    heapOpts: env['KAFKA_HEAP_OPTS'] ?? '-Xms256m -Xmx1G',
    fetchJars: flags.jars === true,
  };
}

function stackOptions(command: Command): Command {
  return command
    .addOption(new Option('--dir <dir>', "the stack's state: Kafka jars, storage, logs, pid files").default(LOCAL_DIR))
    .addOption(new Option('--services <list>', 'what to run, comma separated: kafka, redis, redis-cluster (default: kafka,redis)').env('LOCAL_SERVICES'))
    .addOption(new Option('--cluster', 'also a 3-master Redis Cluster (--cluster-ports)'))
    .addOption(new Option('--kafka-port <port>', 'the Kafka listener').env('LOCAL_KAFKA_PORT').default('9092'))
    .addOption(new Option('--controller-port <port>', 'the KRaft controller listener').env('LOCAL_KAFKA_CONTROLLER_PORT').default('9093'))
    .addOption(new Option('--kafka-dir <dir>', "the broker's storage, logs and pid file (default: <dir>/kafka); a second broker needs its own").env('LOCAL_KAFKA_DIR'))
    .addOption(new Option('--kafka-version <version>', 'the Apache Kafka version of the broker').env('KAFKA_VERSION').default(KAFKA_DEFAULT_VERSION))
    .addOption(new Option('--redis-port <port>', 'the Redis server').env('LOCAL_REDIS_PORT').default('6379'))
    .addOption(new Option('--cluster-ports <ports>', 'the Redis Cluster nodes').default('7000,7001,7002'));
}

const log = (line: string) => process.stdout.write(`[local] ${line}\n`);

/** `kafka-lanes local up|down|status`. */
export function registerLocal(program: Command): void {
  const local = program
    .command('local')
    .description(
      'Run a local Kafka broker (KRaft, from the Apache Kafka jars Maven fetches: needs java 17+ and mvn) and Redis (needs redis-server) ' +
        "for `serverless offline`; state in the project's .kafka-lanes/.",
    );
  stackOptions(
    local
      .command('up')
      .description('Start what is not already answering (idempotent) and wait until it answers.')
      .addOption(new Option('--ready-timeout <seconds>', 'how long to wait for a started broker').env('KAFKA_READY_TIMEOUT').default('90'))
      .addOption(new Option('--jars', 'fetch the broker jars even when a broker already answers').hideHelp()),
  ).action(async (flags: LocalFlags) => {
    await localUp(localConfig(flags, process.cwd()), log);
  });
  stackOptions(
    local
      .command('down')
      .description("Stop what `local up` started from this directory (Kafka's storage is kept unless --wipe); leave anything else alone.")
      .option('--wipe', "also delete the broker's storage and logs (the jars stay)"),
  ).action(async (flags: LocalFlags & { wipe?: boolean }) => {
    if (!(await localDown(localConfig(flags, process.cwd()), { wipe: flags.wipe === true }, log))) throw new LanesError('local down: something could not be stopped (see above)');
  });
  stackOptions(local.command('status').description('One line per service: up or down, its address, whose it is; exits 1 when one is down.')).action(
    async (flags: LocalFlags) => {
        const rows = await localStatus(localConfig(flags, process.cwd()));
      process.stdout.write(rows.map((row) => `${row.service.padEnd(14)} ${(row.up ? 'up' : 'down').padEnd(5)} ${row.detail}\n`).join(''));
      if (rows.some((row) => !row.up)) throw new LanesError(`local status: ${rows.filter((row) => !row.up).map((row) => row.service).join(', ')} down`);
    },
  );
}
