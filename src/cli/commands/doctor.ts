import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { checkKafka, checkRedis, describeKafkaAuth, describeRedisAuth, renderChecks } from '../../admin';
import { watchConnection } from '../../admin/connection-errors';
import { openStore } from '../../connections';
import { LanesError } from '../../errors';
import { ENV, resolveOptions } from '../../options';
import { cliKafka, connectionOptions, kafkaOptions, redisOptions, type KafkaFlags, type RedisFlags } from '../connections';
import { deployedEnvironment, withDeployedEnvironment } from '../env-file';
import { TIERS_OPTION } from '../operator-parts';

/** The source topics of a group when `--topic` is not given, comma separated. */
const TOPICS_ENV = 'KAFKA_LANES_TOPICS';

interface DoctorFlags extends KafkaFlags, RedisFlags {
  readonly topic: string[];
  readonly output: string[];
  readonly tiers?: string;
  readonly envFile?: string;
}

function list(text: string | undefined): string[] {
  return (text ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
}

/** `kafka-lanes doctor <group>`: one row per check, exit 1 when any fails. */
export function registerDoctor(program: Command): void {
  kafkaOptions(redisOptions(
    program
      .command('doctor')
      .description(
        "Check a group's deployment with the configuration the functions get (flags, else the KAFKA_LANES_* environment " +
          'or `--env-file`): brokers reachable with the configured auth, the source, retry, dead-letter and declared output topics exist ' +
          '(partitions; retention at least the longest tier), the consumer group ids (source, retry tiers, `<group>.lanes`) ' +
          'are used by no other consumer (no committed offsets for other topics, no member subscribed to other topics, ' +
          'no member in `<group>.lanes`), Redis reachable with its TLS and AUTH (PING round trip), its ' +
          '`maxmemory-policy` keeps keys, its cluster mode is the configured one. Prints a table; exits 1 when a check fails.',
      )
      .argument('<group>', 'the consumer group of the handler')
      .option('--topic <name>', `a source topic of the group (repeatable; default: $${TOPICS_ENV}, comma separated)`, (text: string, previous: string[]) => [...previous, text], [])
      .option('--output <name>', `a declared output topic (repeatable; default: $${ENV.outputs}, comma separated, as the plugin sets it)`, (text: string, previous: string[]) => [...previous, text], [])
      .option(...TIERS_OPTION)
      .option(
        '--env-file <path>',
        "a deployed function's KAFKA_LANES_* environment, read instead of this shell's: the JSON of " +
          '`aws lambda get-function-configuration --function-name <fn>`, a JSON object or NAME=value lines',
      ),
  )).action(async (group: string, flags: DoctorFlags) => {
    const env =
      flags.envFile === undefined ? process.env : withDeployedEnvironment(process.env, deployedEnvironment(readFileSync(flags.envFile, 'utf8'), flags.envFile));
    const connections = connectionOptions(group, flags, env);
    const tiers = list(flags.tiers);
    const { retry } = resolveOptions({ group, ...(tiers.length === 0 ? {} : { retry: { tiers } }), kafka: { brokers: [...connections.kafka.brokers] } }, env);
    const sources = flags.topic.length > 0 ? flags.topic : list(env[TOPICS_ENV]);
    const outputs = flags.output.length > 0 ? flags.output : list(env[ENV.outputs]);

    // Short timeouts and no retries: a doctor run answers in seconds, whatever is down.
    const kafka = await cliKafka(connections.kafka, 'kafka-lanes-doctor', { connectionTimeout: 3_000, requestTimeout: 10_000, retry: { retries: 0 } });
    const admin = kafka.admin();
    // ioredis waits `disconnectTimeout` (2 s by default) for a refused socket to close again, which it never does.
    const store = await openStore(
      connections.redis,
      { maxRetriesPerRequest: 0, connectTimeout: 3_000, commandTimeout: 5_000, retryStrategy: () => null, disconnectTimeout: 200 },
      { clusterRetryStrategy: () => null },
    );
    // Failures are reported as rows, a refused port as such; the listener also keeps ioredis from printing each error.
    const watch = watchConnection(store);
    try {
      const [kafkaRows, redisRows] = await Promise.all([
        checkKafka(admin, { group, sources, outputs, tiers: retry.tiers, auth: describeKafkaAuth(connections.kafka) }),
        checkRedis(store.server(), connections.redis.clusterNodes.length > 0 ? 'cluster' : 'standalone', describeRedisAuth(connections.redis), watch.explain),
      ]);
      const checks = [...kafkaRows, ...redisRows];
      process.stdout.write(renderChecks(checks));
      const failed = checks.filter((check) => check.status === 'fail');
      if (failed.length > 0) throw new LanesError(`doctor: ${failed.length} check(s) failed: ${failed.map((check) => check.name).join(', ')}`);
    } finally {
      store.disconnect();
      await admin.disconnect();
    }
  });
}
