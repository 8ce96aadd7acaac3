/**
 * The local stack of `kafka-lanes local up|down|status`: a single-node Kafka broker in KRaft mode run from the
 * Apache Kafka jars Maven fetches (java and mvn on PATH), a Redis (redis-server on PATH) and, when asked, a
 * 3-master Redis Cluster (redis-cli on PATH too). Everything it writes lives under one directory of the project
 * (`.kafka-lanes/` by default): the jars per Kafka version, the broker's storage per version, logs and pid files.
 *
 * Up is idempotent: whatever already answers on a port is left alone. Down stops only what this directory's pid
 * files name (a process whose command line still matches, so a reused pid is never signalled).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join, relative } from 'node:path';
import { KAFKA_JARS_POM, LOG4J_PROPERTIES, listenerPorts, serverProperties } from './files';

export type LocalService = 'kafka' | 'redis' | 'redis-cluster';
export const LOCAL_SERVICES: readonly LocalService[] = ['kafka', 'redis', 'redis-cluster'];

/** What `local up|down|status` works on: every path absolute. */
export interface LocalStackConfig {
  /** The state directory: jars, storage, logs, pid files. */
  readonly dir: string;
  readonly services: ReadonlySet<LocalService>;
  readonly kafkaVersion: string;
  readonly kafkaPort: number;
  readonly controllerPort: number;
  /** The broker's own directory (storage, logs, pid file); `<dir>/kafka` unless a second broker needs its own. */
  readonly kafkaDir: string;
  readonly redisPort: number;
  readonly clusterPorts: readonly number[];
  /** How long `up` waits for a started broker to answer. */
  readonly readyTimeoutMs: number;
  /** JVM heap flags of the broker. */
  readonly heapOpts: string;
  /**
   * Fetch the broker jars even when a broker already answers on the port (another project's): this repository's
   * tests start brokers of their own from them.
   */
  readonly fetchJars?: boolean;
}

/** One line of `local status`. */
export interface ServiceStatus {
  readonly service: LocalService;
  readonly up: boolean;
  readonly detail: string;
}

/** A local stack problem the user fixes (a missing tool, a taken port); the CLI prints its message alone. */
export class LocalStackError extends Error {
  override readonly name = 'LocalStackError';
}

const HOST = '127.0.0.1';

/** Where the state of `config` lives. Pure. */
export function stackPaths(config: LocalStackConfig) {
  const logs = join(config.kafkaDir, 'logs');
  return {
    libs: join(config.dir, 'kafka-libs', config.kafkaVersion),
    // Storage per version: a log formatted by a newer Kafka is not readable by an older one.
    data: join(config.kafkaDir, `data-${config.kafkaVersion}`),
    logs,
    pidFile: join(config.kafkaDir, 'kafka.pid'),
    serverProperties: join(config.kafkaDir, 'server.properties'),
    log4j: join(config.kafkaDir, 'log4j.properties'),
    clusterIdFile: join(config.kafkaDir, 'cluster-id'),
    // The version of the broker this directory started last.
    versionFile: join(config.kafkaDir, 'version'),
    stdout: join(logs, 'kafka.out'),
    serverLog: join(logs, 'server.log'),
    redisDir: (port: number) => join(config.dir, `redis-${port}`),
  };
}

/** A KRaft cluster id as Kafka's `Uuid` prints one: 16 random bytes, base64url; never starting with `-`. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

// ------------------------------------------------------------------------------------------------- helpers

type Log = (line: string) => void;

function seconds(since: number): string {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether something accepts TCP connections on 127.0.0.1:<port>. */
export function portOpen(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    socket.setTimeout(timeoutMs);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

/** The full path of `command` on PATH, or undefined. */
function onPath(command: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, command);
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** What to install for each tool the stack runs. */
const INSTALL_HINTS: Record<string, string> = {
  java: 'a Java 17 (or later) runtime: Debian/Ubuntu `apt-get install openjdk-17-jre-headless`, macOS `brew install openjdk@17`',
  mvn: 'Maven, which fetches the Kafka broker jars once: Debian/Ubuntu `apt-get install maven`, macOS `brew install maven`',
  'redis-server': 'Redis: Debian/Ubuntu `apt-get install redis-server`, macOS `brew install redis`',
  'redis-cli': 'the Redis tools (for the cluster): Debian/Ubuntu `apt-get install redis-tools`, macOS `brew install redis`',
};

function requireTool(command: string, purpose: string): void {
  if (onPath(command) === undefined) {
    throw new LocalStackError(`${purpose} needs \`${command}\` on PATH, and it is not there. Install ${INSTALL_HINTS[command] ?? command}, then run this again.`);
  }
}

/** The command line of a live process, or undefined (it is gone, or not ours to read). */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    // No /proc (macOS): ask ps.
    const ps = spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
    return ps.status === 0 && ps.stdout.trim() !== '' ? ps.stdout.trim() : undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').replace(/[^0-9]/g, ''));
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** The pid in `file` when that process is alive and its command line contains `needle` (guards reused pids). */
function ownPid(file: string, needle: string): number | undefined {
  const pid = readPid(file);
  return pid !== undefined && (commandLine(pid)?.includes(needle) ?? false) ? pid : undefined;
}

/** SIGTERM, then SIGKILL after `graceMs`; true once the process is gone. */
async function stopPid(pid: number, name: string, graceMs: number, log: Log): Promise<boolean> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return true;
  }
  for (const deadline = Date.now() + graceMs; Date.now() < deadline; await sleep(100)) {
    if (!alive(pid)) return (log(`${name}: stopped (pid ${pid})`), true);
  }
  log(`${name}: pid ${pid} still running after ${graceMs / 1000}s; sending SIGKILL`);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone meanwhile
  }
  for (let i = 0; i < 50; i++, await sleep(100)) if (!alive(pid)) return (log(`${name}: killed (pid ${pid})`), true);
  log(`${name}: pid ${pid} did not exit`);
  return false;
}

async function waitPortClosed(port: number): Promise<boolean> {
  for (let i = 0; i < 50; i++, await sleep(100)) if (!(await portOpen(port, 300))) return true;
  return false;
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

function runTool(command: string, args: readonly string[], outFile: string, cwd?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const out = openSync(outFile, 'w');
    const child = spawn(command, args, { stdio: ['ignore', out, out], ...(cwd === undefined ? {} : { cwd }) });
    child.once('error', (error) => (closeSync(out), reject(error)));
    child.once('exit', (code) => (closeSync(out), resolve(code ?? 1)));
  });
}

// --------------------------------------------------------------------------------------------------- Redis

/** Sends one command to the Redis on 127.0.0.1:<port> and returns its reply as text; undefined when it does not answer. */
export function redisCommand(port: number, args: readonly string[], timeoutMs = 1000): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: HOST, port });
    let buffer = '';
    const done = (value: string | undefined) => (socket.destroy(), resolve(value));
    socket.setTimeout(timeoutMs);
    socket.once('timeout', () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write(`*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`));
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      const lineEnd = buffer.indexOf('\r\n');
      if (lineEnd < 0) return;
      const head = buffer.slice(0, lineEnd);
      if (head.startsWith('+') || head.startsWith('-') || head.startsWith(':')) return done(head.slice(1));
      if (head.startsWith('$')) {
        const length = Number(head.slice(1));
        if (length < 0) return done('');
        const body = Buffer.from(buffer.slice(lineEnd + 2), 'utf8');
        if (body.length >= length) done(body.subarray(0, length).toString('utf8'));
        return;
      }
      done(head);
    });
  });
}

const redisAnswers = async (port: number) => (await redisCommand(port, ['PING'])) === 'PONG';

async function waitForRedis(port: number): Promise<boolean> {
  for (let i = 0; i < 50; i++, await sleep(100)) if (await redisAnswers(port)) return true;
  return false;
}

async function clusterInfo(port: number): Promise<Record<string, string>> {
  const text = (await redisCommand(port, ['CLUSTER', 'INFO'])) ?? '';
  return Object.fromEntries(text.split('\r\n').map((line) => line.split(':') as [string, string]).filter((pair) => pair.length === 2));
}

async function startRedis(config: LocalStackConfig, port: number, name: string, extra: readonly string[]): Promise<void> {
  const dir = stackPaths(config).redisDir(port);
  mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', HOST, '--daemonize', 'yes', '--save', '', '--appendonly', 'no', ...extra];
  const result = spawnSync('redis-server', [...args, '--dir', dir, '--pidfile', join(dir, 'redis.pid'), '--logfile', join(dir, 'redis.log')], { encoding: 'utf8' });
  if (result.status !== 0 || !(await waitForRedis(port))) {
    throw new LocalStackError(`${name}: redis-server did not answer on ${HOST}:${port}; see ${join(dir, 'redis.log')}${result.stderr ? `\n${result.stderr.trim()}` : ''}`);
  }
}

async function upRedis(config: LocalStackConfig, log: Log): Promise<void> {
  if (await redisAnswers(config.redisPort)) return log(`redis: already up on ${HOST}:${config.redisPort}`);
  requireTool('redis-server', 'The local Redis');
  await startRedis(config, config.redisPort, 'redis', []);
  log(`redis: started on ${HOST}:${config.redisPort}`);
}

async function upRedisCluster(config: LocalStackConfig, log: Log): Promise<void> {
  const t0 = Date.now();
  const ports = config.clusterPorts;
  requireTool('redis-server', 'The local Redis Cluster');
  requireTool('redis-cli', 'The local Redis Cluster');
  for (const port of ports) {
    if (await redisAnswers(port)) continue;
    const dir = stackPaths(config).redisDir(port);
    await startRedis(config, port, `redis-cluster node ${port}`, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-node-timeout', '5000']);
    log(`redis-cluster: started node ${HOST}:${port}`);
  }
  const infos = await Promise.all(ports.map(clusterInfo));
  const created = infos.every((info) => info['cluster_known_nodes'] === String(ports.length) && info['cluster_slots_assigned'] === '16384');
  if (!created) {
    // Half-made (a node restarted without its peers, an interrupted create): start over. `--cluster create`
    // refuses nodes that know other nodes or hold keys, and these nodes hold local data only.
    for (const port of ports) {
      await redisCommand(port, ['FLUSHALL']);
      await redisCommand(port, ['CLUSTER', 'RESET', 'HARD']);
    }
    log(`redis-cluster: creating a cluster of ${ports.length} masters`);
    const out = join(config.dir, 'redis-cluster-create.out');
    const code = await runTool('redis-cli', ['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes'], out);
    if (code !== 0) throw new LocalStackError(`redis-cluster: redis-cli --cluster create failed:\n${tail(out, 40)}`);
  }
  for (const deadline = Date.now() + 30_000; ; await sleep(200)) {
    const states = await Promise.all(ports.map(async (port) => (await clusterInfo(port))['cluster_state']));
    if (states.every((state) => state === 'ok')) break;
    if (Date.now() > deadline) throw new LocalStackError(`redis-cluster: cluster_state is not ok after 30s (redis-cli -p ${ports[0]} cluster info)`);
  }
  log(`redis-cluster: up on ${HOST}:${ports.join(',')} (cluster_state:ok, ${seconds(t0)})`);
}

// --------------------------------------------------------------------------------------------------- Kafka

/** The broker this directory started: a live java process whose command line names its configuration. */
function ownKafkaPid(config: LocalStackConfig): number | undefined {
  const paths = stackPaths(config);
  return ownPid(paths.pidFile, paths.serverProperties);
}

function kafkaClasspath(config: LocalStackConfig): string {
  const { libs } = stackPaths(config);
  return readdirSync(libs).filter((name) => name.endsWith('.jar')).sort().map((name) => join(libs, name)).join(delimiter);
}

function javaLogging(config: LocalStackConfig, file: string): string[] {
  const paths = stackPaths(config);
  return [`-Dlog4j.configuration=file:${paths.log4j}`, `-Dkafka.logs.dir=${paths.logs}`, `-Dkafka.log.file=${file}`];
}

/** The jars are fetched once per version; a stamp of the Maven project makes a change of it fetch them again. */
async function fetchKafkaJars(config: LocalStackConfig, log: Log): Promise<void> {
  const paths = stackPaths(config);
  const want = createHash('sha256').update(`${KAFKA_JARS_POM}\n${config.kafkaVersion}`).digest('hex');
  const stamp = join(paths.libs, '.pom.sha256');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want && existsSync(join(paths.libs, `kafka_2.13-${config.kafkaVersion}.jar`))) return;
  requireTool('mvn', 'Fetching the Kafka broker jars');
  log(`kafka: fetching the Kafka ${config.kafkaVersion} broker jars with Maven (first run only; slow with an empty Maven cache)`);
  const t0 = Date.now();
  // Fetched beside, then moved in: a broker or a test reading the current jars never sees a half-filled directory.
  const work = join(config.dir, 'kafka-libs', `.fetch-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'libs'), { recursive: true });
  mkdirSync(paths.logs, { recursive: true });
  writeFileSync(join(work, 'pom.xml'), KAFKA_JARS_POM);
  const out = join(paths.logs, 'mvn.out');
  const code = await runTool(
    'mvn',
    ['-B', '--no-transfer-progress', '-f', join(work, 'pom.xml'), 'dependency:copy-dependencies', `-Dkafka.version=${config.kafkaVersion}`, `-Dlibs.dir=${join(work, 'libs')}`],
    out,
  );
  if (code !== 0) {
    rmSync(work, { recursive: true, force: true });
    throw new LocalStackError(
      `kafka: mvn could not fetch the Kafka ${config.kafkaVersion} broker jars (a released version? Maven Central reachable?); last lines of ${out}:\n${tail(out, 30)}`,
    );
  }
  writeFileSync(join(work, 'libs', '.pom.sha256'), `${want}\n`);
  const old = `${paths.libs}.old-${process.pid}`;
  if (existsSync(paths.libs)) renameSync(paths.libs, old);
  renameSync(join(work, 'libs'), paths.libs);
  rmSync(old, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
  log(`kafka: ${readdirSync(paths.libs).filter((name) => name.endsWith('.jar')).length} jars in ${relative(process.cwd(), paths.libs) || paths.libs} (${seconds(t0)})`);
}

async function formatKafkaStorage(config: LocalStackConfig, log: Log): Promise<void> {
  const paths = stackPaths(config);
  if (existsSync(join(paths.data, 'meta.properties'))) return;
  const t0 = Date.now();
  if (!existsSync(paths.clusterIdFile) || readFileSync(paths.clusterIdFile, 'utf8').trim() === '') writeFileSync(paths.clusterIdFile, `${newClusterId()}\n`);
  const clusterId = readFileSync(paths.clusterIdFile, 'utf8').trim();
  log(`kafka: formatting Kafka ${config.kafkaVersion} storage (cluster id ${clusterId})`);
  const out = join(paths.logs, 'format.out');
  const code = await runTool(
    'java',
    ['-Xmx256m', '-cp', kafkaClasspath(config), ...javaLogging(config, 'tools.log'), 'kafka.tools.StorageTool', 'format', '--config', paths.serverProperties, '--cluster-id', clusterId, '--ignore-formatted'],
    out,
  );
  if (code !== 0) throw new LocalStackError(`kafka: formatting the storage failed:\n${tail(out, 30)}`);
  log(`kafka: storage formatted (${seconds(t0)})`);
}

function startKafka(config: LocalStackConfig, log: Log): number {
  const paths = stackPaths(config);
  writeFileSync(paths.stdout, '');
  // A fresh server.log per start, so a failure report shows this start's lines only.
  if (existsSync(paths.serverLog)) renameSync(paths.serverLog, `${paths.serverLog}.previous`);
  const out = openSync(paths.stdout, 'a');
  // detached: the broker leads a session of its own, so it outlives this command and the signals sent to its group.
  const child = spawn(
    'java',
    [
      ...config.heapOpts.split(/\s+/).filter((flag) => flag !== ''),
      '-server', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-XX:InitiatingHeapOccupancyPercent=35',
      '-XX:+ExitOnOutOfMemoryError', '-Djava.awt.headless=true',
      `-Xlog:gc*:file=${join(paths.logs, 'gc.log')}:time,tags:filecount=2,filesize=20M`,
      ...javaLogging(config, 'server.log'),
      '-cp', kafkaClasspath(config), 'kafka.Kafka', paths.serverProperties,
    ],
    { cwd: config.kafkaDir, detached: true, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new LocalStackError('kafka: java did not start');
  writeFileSync(paths.pidFile, `${pid}\n`);
  writeFileSync(paths.versionFile, `${config.kafkaVersion}\n`);
  log(`kafka: started the Kafka ${config.kafkaVersion} broker (pid ${pid}), logs in ${paths.logs}`);
  return pid;
}

/**
 * Waits until the broker answers a metadata request with a controller and a broker (a KRaft broker answers
 * metadata before it has registered), then asks for a group coordinator once: a fresh broker creates
 * __consumer_offsets on the first such request and answers "not available" until it is loaded, which kafkajs
 * logs as an ERROR in the first consumer of a run. With `pid`, gives up as soon as that process is gone.
 */
async function waitForKafka(port: number, timeoutMs: number, pid?: number): Promise<'ready' | 'timeout' | 'exited'> {
  const { Kafka, logLevel } = await import('kafkajs');
  const kafka = new Kafka({ clientId: 'kafka-lanes-local', brokers: [`${HOST}:${port}`], logLevel: logLevel.NOTHING, connectionTimeout: 1000, requestTimeout: 3000, retry: { retries: 0 } });
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(500)) {
    if (pid !== undefined && !alive(pid)) return 'exited';
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      await admin.listTopics();
      if (cluster.brokers.length > 0 && cluster.controller !== null && cluster.controller !== undefined) {
        await admin.disconnect();
        const warm = new Kafka({ clientId: 'kafka-lanes-local', brokers: [`${HOST}:${port}`], logLevel: logLevel.NOTHING }).admin();
        await warm.connect().then(() => warm.describeGroups(['kafka-lanes-local-warm-up'])).catch(() => undefined);
        await warm.disconnect().catch(() => undefined);
        return 'ready';
      }
    } catch {
      // not yet
    }
    await admin.disconnect().catch(() => undefined);
  }
  return 'timeout';
}

async function upKafka(config: LocalStackConfig, log: Log): Promise<void> {
  const t0 = Date.now();
  const paths = stackPaths(config);
  const address = `${HOST}:${config.kafkaPort}`;
  if (await portOpen(config.kafkaPort)) {
    // This directory's broker, another project's (or one still starting): only check that it answers.
    if ((await waitForKafka(config.kafkaPort, 20_000)) !== 'ready') throw new LocalStackError(`kafka: something listens on ${address} but does not answer as a Kafka broker`);
    // A running broker is never replaced: say which version answers, and refuse another one asked for.
    const running = ownKafkaPid(config) !== undefined && existsSync(paths.versionFile) ? readFileSync(paths.versionFile, 'utf8').trim() : undefined;
    if (running !== undefined && running !== config.kafkaVersion) {
      throw new LocalStackError(`kafka: the broker on ${address} runs Kafka ${running}, not ${config.kafkaVersion}; stop it first (kafka-lanes local down)`);
    }
    log(`kafka: already up on ${address} (${running === undefined ? 'not started from this directory' : `Kafka ${running}`}, ${seconds(t0)})`);
    if (config.fetchJars === true) await fetchKafkaJars(config, log);
    return;
  }
  requireTool('java', 'The local Kafka broker');
  let pid = ownKafkaPid(config);
  if (pid === undefined) {
    if (await portOpen(config.controllerPort)) throw new LocalStackError(`kafka: the controller port ${config.controllerPort} is taken by another process (--controller-port)`);
    mkdirSync(paths.data, { recursive: true });
    mkdirSync(paths.logs, { recursive: true });
    await fetchKafkaJars(config, log);
    writeFileSync(paths.serverProperties, serverProperties({ dataDir: paths.data, kafkaPort: config.kafkaPort, controllerPort: config.controllerPort }));
    writeFileSync(paths.log4j, LOG4J_PROPERTIES);
    await formatKafkaStorage(config, log);
    pid = startKafka(config, log);
  } else {
    log(`kafka: broker pid ${pid} is starting; waiting for it`);
  }
  const outcome = await waitForKafka(config.kafkaPort, config.readyTimeoutMs, pid);
  if (outcome !== 'ready') {
    // Not running any more: forget the pid so the next `up` starts afresh.
    if (ownKafkaPid(config) === undefined) rmSync(paths.pidFile, { force: true });
    const logs = [paths.stdout, paths.serverLog].map((file) => tail(file, 30)).filter((text) => text !== '');
    throw new LocalStackError(
      `kafka: the broker ${outcome === 'exited' ? `(pid ${pid}) exited` : `did not answer on ${address} within ${config.readyTimeoutMs / 1000}s`}; ` +
        `last log lines:\n${logs.join('\n----\n')}\nfull logs: ${paths.logs}`,
    );
  }
  log(`kafka: Kafka ${config.kafkaVersion} up on ${address} (${seconds(t0)})`);
}

// ------------------------------------------------------------------------------------------------ commands

/**
 * Starts what `config.services` names and is not already answering; resolves once all answer.
 *
 * @example
 * await localUp(config, (line) => console.log(`[local] ${line}`));
 */
export async function localUp(config: LocalStackConfig, log: Log): Promise<void> {
  const t0 = Date.now();
  mkdirSync(config.dir, { recursive: true });
  // The directory is state, never source: keep it out of the project's git without touching its .gitignore.
  const ignore = join(config.dir, '.gitignore');
  if (!existsSync(ignore)) writeFileSync(ignore, '# Written by kafka-lanes local up: the local stack\'s jars, storage and logs.\n*\n');
  if (config.services.has('redis')) await upRedis(config, log);
  if (config.services.has('redis-cluster')) await upRedisCluster(config, log);
  if (config.services.has('kafka')) await upKafka(config, log);
  log(`local stack up (${seconds(t0)})`);
}

/** The Redis servers this directory started: `<dir>/redis-<port>/redis.pid` naming a live redis-server on that port. */
function ownRedis(config: LocalStackConfig): { port: number; pid: number | undefined; dir: string }[] {
  if (!existsSync(config.dir)) return [];
  return readdirSync(config.dir)
    .map((name) => /^redis-(\d+)$/.exec(name))
    .filter((match) => match !== null)
    .map((match) => {
      const port = Number(match[1]);
      const dir = join(config.dir, match[0]);
      return { port, dir, pid: ownPid(join(dir, 'redis.pid'), `:${port}`) };
    });
}

/**
 * Stops what this directory started: its broker and every Redis it started (cluster nodes included), whatever
 * ports they were given. Redis state is removed (nothing is saved); Kafka's storage is kept unless `wipe`.
 * A process another directory started is left alone, which is no failure. Resolves to false when something
 * could not be stopped.
 */
export async function localDown(config: LocalStackConfig, options: { wipe: boolean }, log: Log): Promise<boolean> {
  const paths = stackPaths(config);
  let ok = true;
  const configured = existsSync(paths.serverProperties) ? listenerPorts(readFileSync(paths.serverProperties, 'utf8')) : undefined;
  const kafkaPort = configured?.kafkaPort ?? config.kafkaPort;
  const pid = ownKafkaPid(config);
  if (pid !== undefined) {
    // A single-node KRaft broker shuts down in a few seconds; 30 s covers a slow log flush.
    ok = (await stopPid(pid, 'kafka', 30_000, log)) && ok;
    for (const port of configured === undefined ? [] : [configured.kafkaPort, configured.controllerPort]) {
      if (await waitPortClosed(port)) continue;
      log(`kafka: port ${port} is still held after the broker stopped`);
      ok = false;
    }
  } else if (await portOpen(kafkaPort)) {
    log(`kafka: ${HOST}:${kafkaPort} is running, but not started from this directory: left alone`);
  } else {
    log('kafka: not running');
  }
  rmSync(paths.pidFile, { force: true });
  if (options.wipe) {
    if (ownKafkaPid(config) !== undefined) {
      log('kafka: the broker still runs; its data is not wiped');
      ok = false;
    } else if (existsSync(config.kafkaDir)) {
      for (const name of readdirSync(config.kafkaDir)) {
        if (name === 'data' || name.startsWith('data-')) rmSync(join(config.kafkaDir, name), { recursive: true, force: true });
      }
      for (const file of [paths.clusterIdFile, paths.logs, paths.versionFile]) rmSync(file, { recursive: true, force: true });
      log('kafka: data wiped (storage of every version, logs; the jars stay)');
    }
  }
  const servers = ownRedis(config);
  // A Redis takes 1-2 s to exit after SIGTERM (a clean SHUTDOWN; nothing is saved): stop them in parallel.
  const stopped = await Promise.all(
    servers.map(async (server) => {
      if (server.pid === undefined) {
        if (!(await portOpen(server.port))) rmSync(server.dir, { recursive: true, force: true });
        return true;
      }
      if (!(await stopPid(server.pid, `redis ${server.port}`, 10_000, log))) return false;
      if (!(await waitPortClosed(server.port))) return (log(`redis ${server.port}: port still held after the server stopped`), false);
      rmSync(server.dir, { recursive: true, force: true });
      return true;
    }),
  );
  ok = stopped.every(Boolean) && ok;
  rmSync(join(config.dir, 'redis-cluster-create.out'), { force: true });
  const others = [...(config.services.has('redis') ? [config.redisPort] : []), ...(config.services.has('redis-cluster') ? config.clusterPorts : [])].filter(
    (port) => !servers.some((server) => server.port === port),
  );
  for (const port of others) if (await portOpen(port)) log(`redis ${port}: running, but not started from this directory: left alone`);
  return ok;
}

/** One line per service `config.services` names: up or down, its address, whose it is. */
export async function localStatus(config: LocalStackConfig): Promise<ServiceStatus[]> {
  const rows: ServiceStatus[] = [];
  const paths = stackPaths(config);
  if (config.services.has('kafka')) {
    const address = `${HOST}:${config.kafkaPort} (controller ${HOST}:${config.controllerPort}`;
    if (await portOpen(config.kafkaPort)) {
      const pid = ownKafkaPid(config);
      const version = existsSync(paths.versionFile) ? readFileSync(paths.versionFile, 'utf8').trim() : 'version unknown';
      rows.push({ service: 'kafka', up: true, detail: `${address}; ${pid === undefined ? 'not started from this directory' : `Kafka ${version}, pid ${pid}, this directory`})` });
    } else {
      rows.push({ service: 'kafka', up: false, detail: `${address})` });
    }
  }
  if (config.services.has('redis')) {
    const pid = ownPid(join(paths.redisDir(config.redisPort), 'redis.pid'), `:${config.redisPort}`);
    const up = await redisAnswers(config.redisPort);
    rows.push({ service: 'redis', up, detail: `${HOST}:${config.redisPort}${up ? ` (${pid === undefined ? 'not started from this directory' : `pid ${pid}, this directory`})` : ''}` });
  }
  if (config.services.has('redis-cluster')) {
    const addresses = `${HOST}:${config.clusterPorts.join(',')}`;
    const down = [];
    for (const port of config.clusterPorts) if (!(await redisAnswers(port))) down.push(port);
    const state = config.clusterPorts[0] === undefined ? undefined : (await clusterInfo(config.clusterPorts[0]))['cluster_state'];
    if (down.length === 0 && state === 'ok') rows.push({ service: 'redis-cluster', up: true, detail: `${addresses} (cluster_state:ok)` });
    else if (down.length === config.clusterPorts.length) rows.push({ service: 'redis-cluster', up: false, detail: addresses });
    else rows.push({ service: 'redis-cluster', up: false, detail: `${addresses} (nodes not answering: ${down.join(' ') || 'none'}; cluster_state:${state ?? '?'})` });
  }
  return rows;
}
