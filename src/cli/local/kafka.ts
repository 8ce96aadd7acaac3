/** The local Kafka broker: jars fetched with Maven, storage formatted, `kafka.Kafka` started detached. */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { HOST, LocalStackError, newClusterId, stackPaths, type LocalStackConfig, type Log } from './config';
import { KAFKA_JARS_POM, LOG4J_PROPERTIES, serverProperties } from './files';
import { sleep } from '../../deadline';
import { alive, ownPid, portOpen, requireTool, runTool, seconds, tail } from './processes';

/** The broker this directory started: a live java process whose command line names its configuration. */
export function ownKafkaPid(config: LocalStackConfig): number | undefined {
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

export async function upKafka(config: LocalStackConfig, log: Log): Promise<void> {
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
