/**
 * A second local Kafka broker with authentication and an authorizer, for the least-privilege proof
 * (test/integration/acl.test.ts): KRaft combined mode, a SASL_PLAINTEXT listener taking SCRAM-SHA-512 only,
 * Kafka's StandardAuthorizer with `allow.everyone.if.no.acl.found=false`, so a principal may do exactly what
 * its ACLs allow. It runs from the jars `npm run local:up` fetched (.local/kafka-libs/<version>), on free ports
 * of its own and a data directory under .local/ removed when it stops; the usual broker on 9092 is untouched.
 *
 * The SCRAM users are written into the storage when it is formatted (`kafka-storage format --add-scram`), so
 * they exist before the broker answers: kafkajs cannot create SCRAM credentials (no AlterUserScramCredentials).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { KAFKA_DEFAULT_VERSION } from '../../../src/cli/local/files';
import { freePort } from '../../../infra/local/demo/offline-process';

const REPO = resolve(__dirname, '../../..');
const LIBS_ROOT = join(REPO, '.local', 'kafka-libs');

/** A SCRAM-SHA-512 user of the broker. */
export interface ScramUser {
  readonly username: string;
  readonly password: string;
}

export interface SaslBroker {
  /** `127.0.0.1:<port>` of the SASL_PLAINTEXT listener. */
  readonly brokers: string[];
  /** The super user (every operation allowed, ACLs or not). */
  readonly admin: ScramUser;
  /** A kafkajs client authenticated as `user`. */
  kafka(user: ScramUser, clientId?: string): Kafka;
  /**
   * Where the authorizer's log ends now: `deniedSince(mark)` returns what it denied after. Kafka's authorizer
   * logs each request it refuses (`Principal = User:x is Denied operation = READ ... on resource = Topic:LITERAL:t`);
   * topics left out of a listing are not logged, they are not refusals.
   */
  authorizerMark(): number;
  deniedSince(mark: number): string[];
  /** Stops the broker and removes its directory. */
  stop(): Promise<void>;
}


/**
 * The jars of the Kafka version the usual local broker runs (`KAFKA_VERSION`, else what `local up` recorded in
 * .local/kafka/version, else the local stack's default version), as `npm run local:up` fetched them.
 */
function kafkaClasspath(): string {
  const recorded = join(REPO, '.local', 'kafka', 'version');
  const version = process.env['KAFKA_VERSION'] ?? (existsSync(recorded) ? readFileSync(recorded, 'utf8').trim() : KAFKA_DEFAULT_VERSION);
  const dir = join(LIBS_ROOT, version ?? '');
  if (!existsSync(dir)) throw new Error(`No Kafka ${String(version)} jars in ${LIBS_ROOT}: run \`npm run local:up\` (it fetches them)`);
  return readdirSync(dir).filter((name) => name.endsWith('.jar')).map((name) => join(dir, name)).join(':');
}

/** A KRaft cluster id: 16 random bytes, base64url (Kafka's `Uuid`); never starting with `-` (read as an option). */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function serverProperties(dir: string, port: number, controllerPort: number, admin: ScramUser): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=SASL_PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=SASL_PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=SASL_PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=SCRAM-SHA-512',
    'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
    `listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="${admin.username}" password="${admin.password}";`,
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    // The controller listener is plaintext on loopback: the broker half reaches the controller half as
    // ANONYMOUS there, and the controller's requests need CLUSTER_ACTION. Clients use the SASL listener only.
    `super.users=User:${admin.username};User:ANONYMOUS`,
    'allow.everyone.if.no.acl.found=false',
    `log.dirs=${dir}/data`,
    `metadata.log.dir=${dir}/data`,
    'auto.create.topics.enable=false',
    'num.partitions=1',
    'default.replication.factor=1',
    'min.insync.replicas=1',
    // One partition for the offsets topic: one coordinator to load, so once one group answers, all do.
    'offsets.topic.num.partitions=1',
    'offsets.topic.replication.factor=1',
    'transaction.state.log.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'num.network.threads=2',
    'num.io.threads=2',
    'num.recovery.threads.per.data.dir=1',
    'background.threads=2',
    '',
  ].join('\n');
}

/** The broker's log in logs/server.log, and its authorizer's decisions apart in logs/authorizer.log. */
function log4jProperties(dir: string): string {
  return [
    'log4j.rootLogger=INFO, server',
    'log4j.appender.server=org.apache.log4j.FileAppender',
    `log4j.appender.server.File=${dir}/logs/server.log`,
    'log4j.appender.server.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.state.change.logger=WARN',
    // Denials are logged at INFO, allowed requests at DEBUG.
    'log4j.logger.kafka.authorizer.logger=INFO, authorizer',
    'log4j.additivity.kafka.authorizer.logger=false',
    'log4j.appender.authorizer=org.apache.log4j.FileAppender',
    `log4j.appender.authorizer.File=${dir}/logs/authorizer.log`,
    'log4j.appender.authorizer.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.authorizer.layout.ConversionPattern=%m%n',
    '',
  ].join('\n');
}

function java(heap: readonly string[], classpath: string, dir: string, args: readonly string[]): string[] {
  return [...heap, '-cp', classpath, `-Dlog4j.configuration=file:${dir}/log4j.properties`, ...args];
}

/**
 * Runs `attempt` until it resolves, waiting `pauseMs` between tries, until `deadline` (then throws its last error)
 * or until `gone()` says why trying is pointless (the broker exited).
 */
async function retryUntil<T>(what: string, deadline: number, gone: () => string | undefined, attempt: () => Promise<T>, pauseMs = 500): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const reason = gone();
      if (reason !== undefined) throw new Error(`${what}: ${reason}`, { cause: error });
      if (Date.now() > deadline) throw new Error(`${what}: still failing at the deadline: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      await new Promise((done) => setTimeout(done, pauseMs));
    }
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts the broker with these SCRAM users (and a super user, `admin`) and waits until it serves groups and
 * idempotent producers: the broker answers, a group's coordinator answers an offset fetch (the offsets topic is
 * created and loaded; before that a coordinator says `COORDINATOR_LOAD_IN_PROGRESS`), and an idempotent producer
 * gets its producer id and writes.
 *
 * @example
 * const broker = await startSaslBroker([{ username: 'handler', password: 'handler-secret' }]);
 * const producer = broker.kafka({ username: 'handler', password: 'handler-secret' }).producer();
 */
export async function startSaslBroker(users: readonly ScramUser[], readyTimeoutMs = 150_000): Promise<SaslBroker> {
  const deadline = Date.now() + readyTimeoutMs;
  const admin: ScramUser = { username: 'admin', password: `admin-${randomBytes(6).toString('hex')}` };
  const port = await freePort();
  let controllerPort = await freePort();
  // The OS may hand out the port it just freed again.
  while (controllerPort === port) controllerPort = await freePort();
  const dir = join(REPO, '.local', `kafka-acl-${port}-${randomBytes(3).toString('hex')}`);
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const config = join(dir, 'server.properties');
  writeFileSync(config, serverProperties(dir, port, controllerPort, admin));
  writeFileSync(join(dir, 'log4j.properties'), log4jProperties(dir));
  const classpath = kafkaClasspath();

  const scram = [admin, ...users].flatMap((user) => ['--add-scram', `SCRAM-SHA-512=[name=${user.username},password=${user.password}]`]);
  const format = spawnSync('java', java(['-Xmx256m'], classpath, dir, ['kafka.tools.StorageTool', 'format', '--config', config, '--cluster-id', clusterId(), ...scram]), { encoding: 'utf8' });
  if (format.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`kafka-storage format failed (${String(format.status)}): ${format.stdout}${format.stderr}`);
  }

  const out = createWriteStream(join(dir, 'logs', 'kafka.out'));
  const heap = ['-Xms128m', '-Xmx512m', '-XX:+UseG1GC', '-XX:+ExitOnOutOfMemoryError', '-Djava.awt.headless=true'];
  const child = spawn('java', java(heap, classpath, dir, ['kafka.Kafka', config]), { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);

  const brokers = [`127.0.0.1:${port}`];
  const kafka = (user: ScramUser, clientId = `acl-${user.username}`): Kafka =>
    new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING, sasl: { mechanism: 'scram-sha-512', username: user.username, password: user.password } });
  const authorizerLog = join(dir, 'logs', 'authorizer.log');
  const authorizerText = (): string => (existsSync(authorizerLog) ? readFileSync(authorizerLog, 'utf8') : '');
  const authorizerMark = (): number => Buffer.byteLength(authorizerText());
  const deniedSince = (mark: number): string[] =>
    Buffer.from(authorizerText()).subarray(mark).toString('utf8').split('\n').filter((line) => line.includes(' is Denied '));
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const probe = `acl-probe-${randomBytes(3).toString('hex')}`;
    const gone = (): string | undefined => (child.exitCode === null && child.signalCode === null ? undefined : `the broker exited (${String(child.exitCode ?? child.signalCode)})`);
    await retryUntil('the SASL broker answering', deadline, gone, async () => {
      await withAdmin(kafka(admin), async (client) => {
        await client.describeCluster();
      });
    });
    await retryUntil('a group coordinator of the SASL broker answering', deadline, gone, () =>
      withAdmin(kafka(admin), async (client) => {
        const topics = await client.listTopics();
        if (!topics.includes(probe)) await client.createTopics({ topics: [{ topic: probe, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
        await client.fetchOffsets({ groupId: probe, topics: [probe] });
      }),
    );
    // An idempotent producer's first request (InitProducerId) waits for the transaction coordinator to load.
    await retryUntil('the producer ids of the SASL broker', deadline, gone, async () => {
      const producer = kafka(admin).producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } });
      await producer.connect();
      try {
        await producer.send({ topic: probe, acks: -1, messages: [{ value: 'ready' }] });
      } finally {
        await producer.disconnect();
      }
    });
  } catch (error) {
    const log = join(dir, 'logs', 'server.log');
    const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
    await stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${tail}`, { cause: error });
  }
  return { brokers, admin, kafka, authorizerMark, deniedSince, stop };
}

/** Runs `work` with a connected admin of `kafka`, disconnecting it after. */
export async function withAdmin<T>(kafka: Kafka, work: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin({ retry: { retries: 2, initialRetryTime: 200 } });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
