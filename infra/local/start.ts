/**
 * `npm start`: the example service end to end on this machine.
 *   1. starts the local stack unless Kafka and Redis already answer (`npm run local:up` is idempotent),
 *   2. ensures the topics (source, retry tiers, dead letters),
 *   3. runs the example under `serverless offline start` with the kafka-lanes offline Kafka trigger,
 *   4. starts the dashboard (`kafka-lanes dashboard`, read only) and prints its URL,
 *   5. produces a demo load (orders keyed by customer, some poison, 3 % of payment calls failing for a while),
 *      shows live progress: retries, blocked lanes, parked followers and their release,
 *   6. ends with a summary checked against what was produced; exits 1 when the check fails.
 *
 *   npm start                          2,000 orders, 3 % transient failures
 *   npm start -- --records 200         a short run (CI); or DEMO_RECORDS=200
 *   npm start -- --failure-rate 0 --latency-ms 50
 *   npm start -- --keep-dashboard      the dashboard stays up after the summary, until Ctrl-C
 */
import { CompletionStore } from '../../src/completion/store';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MultiBar, Presets } from 'cli-progress';
import { Redis } from 'ioredis';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { resultKeys } from '../../functions/results';
import { ensureTopics, readStatus, renderStatus } from '../../src/admin';
import { quietTopicCreation, type TopicCreationWindow } from './kafka-log';
import { completionGroupId } from '../../src/committer';
import { startDashboard, type Dashboard } from '../../src/dashboard';
import { deadLetterTopic } from '../../src/options';
import { checkRun, demoOrders, type ProducedOrder, type RunCheck } from './demo/check';
import { freePort, startServerlessOffline, type OfflineProcess } from './demo/offline-process';

const ROOT = join(__dirname, '..', '..');
/** Must match `retryTiers` of the `orders` function in serverless.yml. */
export const DEMO_TIERS = ['1s', '5s', '30s'] as const;

export interface DemoSettings {
  readonly records: number;
  readonly customers: number;
  readonly poisonEvery: number;
  readonly failureRate: number;
  readonly latencyMs: number;
  readonly partitions: number;
  readonly topic: string;
  readonly group: string;
  readonly brokers: string;
  readonly redisUrl: string;
  /** Give up waiting for the run after this long. */
  readonly timeoutMs: number;
  /** Leave the dashboard running after the summary, until Ctrl-C. */
  readonly keepDashboard: boolean;
}

function settingsFrom(argv: readonly string[], env: NodeJS.ProcessEnv): DemoSettings {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      records: { type: 'string' },
      customers: { type: 'string' },
      'poison-every': { type: 'string' },
      'failure-rate': { type: 'string' },
      'latency-ms': { type: 'string' },
      partitions: { type: 'string' },
      'timeout-s': { type: 'string' },
      'keep-dashboard': { type: 'boolean' },
    },
  });
  const number = (flag: string, variable: string, fallback: number, min: number, max: number): number => {
    const text = (values as Record<string, string | undefined>)[flag] ?? env[variable];
    const value = text === undefined || text === '' ? fallback : Number(text);
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new Error(`Expected --${flag} (or ${variable}) to be a number from ${min} to ${max}, got \`${text}\``);
    }
    return value;
  };
  return {
    records: number('records', 'DEMO_RECORDS', 2_000, 1, 1_000_000),
    customers: number('customers', 'DEMO_CUSTOMERS', 50, 1, 100_000),
    poisonEvery: number('poison-every', 'DEMO_POISON_EVERY', 97, 0, 1_000_000),
    // A few percent of payment calls fail once in a while, so the retry path shows: retries, blocked lanes, parked
    // followers and their release. Five attempts make a transient failure end in the dead-letter topic almost never.
    failureRate: number('failure-rate', 'DEMO_FAILURE_RATE', 0.03, 0, 0.9),
    latencyMs: number('latency-ms', 'DEMO_LATENCY_MS', 20, 0, 60_000),
    partitions: number('partitions', 'DEMO_PARTITIONS', 6, 1, 1_000),
    timeoutMs: number('timeout-s', 'DEMO_TIMEOUT_S', 600, 10, 86_400) * 1_000,
    topic: env['DEMO_TOPIC'] || 'orders',
    group: env['DEMO_GROUP'] || 'orders-svc',
    brokers: env['KAFKA_LANES_BROKERS'] || '127.0.0.1:9092',
    redisUrl: env['KAFKA_LANES_REDIS_URL'] || 'redis://127.0.0.1:6379',
    keepDashboard: values['keep-dashboard'] === true || env['DEMO_KEEP_DASHBOARD'] === '1',
  };
}

function reachable(hostPort: string): Promise<boolean> {
  const cut = hostPort.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect({ host: hostPort.slice(0, cut), port: Number(hostPort.slice(cut + 1)) });
    socket.setTimeout(2_000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
  });
}

function run(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}`))));
  });
}

async function ensureStack(settings: DemoSettings): Promise<void> {
  const redis = new URL(settings.redisUrl);
  const up = (await reachable(settings.brokers.split(',')[0]!)) && (await reachable(`${redis.hostname}:${redis.port || 6379}`));
  if (up) {
    console.log(`local stack: Kafka ${settings.brokers} and Redis ${settings.redisUrl} answer`);
    return;
  }
  console.log('local stack: not running; starting it (npm run local:up)');
  await run('npm', ['run', '--silent', 'local:up']);
}

async function produce(kafka: Kafka, settings: DemoSettings, run: string, orders: readonly ProducedOrder[]): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    for (let from = 0; from < orders.length; from += 500) {
      const messages = orders.slice(from, from + 500).map((order, index) => ({
        key: order.customerId,
        // Half the poison orders are refused by the handler, the other half are not JSON at all.
        value:
          order.poison && (from + index) % 2 === 0
            ? `{"orderId": "${order.orderId}", broken`
            : JSON.stringify({ run, orderId: order.orderId, customerId: order.customerId, seq: order.seq, amount: 10 + (order.seq % 90), ...(order.poison ? { poison: true } : {}) }),
        headers: { 'demo-run': run, 'demo-order': order.orderId },
      }));
      await producer.send({ topic: settings.topic, messages, acks: -1 });
    }
  } finally {
    await producer.disconnect();
  }
}

/** Follows the dead-letter topic and collects the orders of this run (by the header the copies keep). */
async function followDeadLetters(kafka: Kafka, settings: DemoSettings, run: string): Promise<{ ids: Set<string>; stop: () => Promise<void> }> {
  const ids = new Set<string>();
  const consumer = kafka.consumer({ groupId: `kl-demo-check-${run}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: deadLetterTopic(settings.group), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (message.headers?.['demo-run']?.toString() !== run) return;
      const id = message.headers['demo-order']?.toString();
      if (id !== undefined) ids.add(id);
    },
  });
  return {
    ids,
    stop: async () => {
      await consumer.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteGroups([`kl-demo-check-${run}`]).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

async function readResults(redis: Redis, run: string, orders: readonly ProducedOrder[]): Promise<{ processedSeqs: Map<string, number[]>; processedIds: Set<string>; retried: number; charged: number }> {
  const customers = [...new Set(orders.map((order) => order.customerId))];
  const pipeline = redis.pipeline();
  for (const customer of customers) pipeline.lrange(resultKeys.customer(run, customer), 0, -1);
  pipeline.smembers(resultKeys.processed(run));
  pipeline.scard(resultKeys.attempts(run));
  pipeline.hlen(resultKeys.charges(run));
  const replies = (await pipeline.exec()) ?? [];
  const processedSeqs = new Map<string, number[]>();
  customers.forEach((customer, index) => processedSeqs.set(customer, ((replies[index]?.[1] as string[]) ?? []).map(Number)));
  const processedIds = new Set((replies[customers.length]?.[1] as string[]) ?? []);
  const retried = Number(replies[customers.length + 1]?.[1] ?? 0);
  const charged = Number(replies[customers.length + 2]?.[1] ?? 0);
  return { processedSeqs, processedIds, retried, charged };
}

/** Committed offsets of a group against the end offsets of a topic, per partition. */
async function behind(admin: Admin, groupId: string, topic: string): Promise<{ lag: number; partitions: Array<{ partition: number; committed: number; end: number }> }> {
  const [ends, committed] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId, topics: [topic] })]);
  const byPartition = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  const partitions = ends.map(({ partition, high }) => ({ partition, committed: Math.max(byPartition.get(partition) ?? 0, 0), end: Number(high) }));
  return { lag: partitions.reduce((sum, p) => sum + (p.end - p.committed), 0), partitions };
}

async function waitFor<T>(what: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number, every = 500): Promise<{ value: T; met: boolean }> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (done(value)) return { value, met: true };
    if (Date.now() >= until) return { value, met: false };
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

function summarize(check: RunCheck, completion: { met: boolean; lag: number }, retried: number, seconds: number, charged: number): string {
  const lines = [
    '',
    `summary (${seconds.toFixed(1)} s, ${(check.produced / seconds).toFixed(0)} orders/s end to end)`,
    `  produced        ${check.produced}`,
    `  processed       ${check.processed}${retried > 0 ? ` (${retried} after a retry)` : ''}`,
    `  charged         ${charged} (the payment call is a durable step: a retried order is not charged again)`,
    `  dead-lettered   ${check.deadLettered}`,
    `  duplicates      ${check.duplicates}`,
    `  ${check.missing.length === 0 ? 'ok ' : 'BAD'} every order processed or dead-lettered${check.missing.length === 0 ? '' : `: ${check.missing.length} missing, e.g. ${check.missing.slice(0, 5).join(', ')}`}`,
    `  ${check.unexpected.length === 0 ? 'ok ' : 'BAD'} no poison order processed, none both processed and dead-lettered${check.unexpected.length === 0 ? '' : `: ${check.unexpected.slice(0, 5).join(', ')}`}`,
    `  ${check.outOfOrder.length === 0 ? 'ok ' : 'BAD'} per-customer order intact${check.outOfOrder.length === 0 ? '' : `: ${check.outOfOrder.length} customers out of order, e.g. ${JSON.stringify(check.outOfOrder[0])}`}`,
    `  ${completion.met ? 'ok ' : 'BAD'} completion group at the end offsets${completion.met ? '' : ` (${completion.lag} records behind)`}`,
  ];
  return lines.join('\n');
}

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const settings = settingsFrom(argv, process.env);
  await ensureStack(settings);
  const run = `run-${Date.now().toString(36)}`;
  // Leader elections right after the topics are created are expected and waited out: counted, not printed as errors.
  const topicCreation: TopicCreationWindow = { expected: false, counted: 0 };
  const kafka = new Kafka({ clientId: 'kafka-lanes-demo', brokers: settings.brokers.split(','), logLevel: logLevel.ERROR, logCreator: quietTopicCreation(topicCreation) });
  const admin = kafka.admin();
  await admin.connect();
  const redis = new Redis(settings.redisUrl, { maxRetriesPerRequest: 2 });
  mkdirSync(join(ROOT, '.local'), { recursive: true });
  const logFile = join(ROOT, '.local', 'serverless-offline.log');
  let offline: OfflineProcess | undefined;
  let deadLetters: Awaited<ReturnType<typeof followDeadLetters>> | undefined;
  let dashboard: Dashboard | undefined;
  const interrupted = new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  try {
    // Source, retry-tier and dead-letter topics, created or checked (retention above the longest tier).
    topicCreation.expected = true;
    const ensured = await ensureTopics(admin, {
      group: settings.group,
      topics: [{ topic: settings.topic, partitions: settings.partitions }],
      tiers: DEMO_TIERS,
      retryPartitions: settings.partitions,
    }).finally(() => (topicCreation.expected = false));
    const elections = topicCreation.counted > 0 ? `; waited for their leaders (${topicCreation.counted} "not the leader yet" answers)` : '';
    console.log(`topics: ${ensured.topics.map((t) => t.topic).join(', ')}${ensured.actions.length > 0 ? ` (${ensured.actions.length} created or changed)` : ''}${elections}`);
    console.log(`serverless offline: starting the example service (log: ${logFile})`);
    offline = await startServerlessOffline({
      cwd: ROOT,
      logFile,
      env: {
        DEMO_TOPIC: settings.topic,
        DEMO_GROUP: settings.group,
        DEMO_FAILURE_RATE: String(settings.failureRate),
        DEMO_LATENCY_MS: String(settings.latencyMs),
        KAFKA_LANES_BROKERS: settings.brokers,
        KAFKA_LANES_REDIS_URL: settings.redisUrl,
        OFFLINE_LAMBDA_PORT: String(await freePort()),
        POWERTOOLS_LOG_LEVEL: process.env['POWERTOOLS_LOG_LEVEL'] ?? 'WARN',
      },
    });
    deadLetters = await followDeadLetters(kafka, settings, run);
    dashboard = await startDashboard({ group: settings.group, admin, store: new CompletionStore(redis), kafka, log: (line) => console.log(line) });
    console.log(`dashboard: open ${dashboard.url}  (or: npm run cli -- dashboard ${settings.group})`);
    const orders = demoOrders(run, settings.records, settings.customers, settings.poisonEvery);
    const started = Date.now();
    console.log(`producing ${orders.length} orders of ${settings.customers} customers to ${settings.topic} (${orders.filter((o) => o.poison).length} poison), run ${run}`);
    await produce(kafka, settings, run, orders);

    // One bar for the run, one per source partition (the status table of `kafka-lanes status`, live).
    const bars = new MultiBar(
      {
        hideCursor: true,
        clearOnComplete: false,
        // Without a terminal (CI) the bars are printed every few seconds.
        noTTYOutput: true,
        notTTYSchedule: 5_000,
        format: '{name} |{bar}| {value}/{total} {detail}',
      },
      Presets.shades_classic,
    );
    const overall = bars.create(orders.length, 0, { name: 'orders     ', detail: '' });
    const partitionBars = new Map<number, ReturnType<MultiBar['create']>>();
    let stopped = false;
    void interrupted.then(() => (stopped = true));
    const progress = await waitFor(
      async () => {
        const results = await readResults(redis, run, orders);
        const status = await readStatus({ group: settings.group, admin, store: new CompletionStore(redis) });
        const finished = new Set([...results.processedIds, ...deadLetters!.ids]).size;
        const seconds = (Date.now() - started) / 1000;
        overall.update(finished, {
          detail:
            `| processed ${results.processedIds.size} | dead-lettered ${deadLetters!.ids.size} | retried ${results.retried} | ` +
            `${(finished / seconds).toFixed(0)} orders/s | retry depth ${status.retryDepth} | ` +
            `blocked lanes ${status.partitions.reduce((sum, p) => sum + p.blockedLanes, 0)} | parked ${status.partitions.reduce((sum, p) => sum + p.parked, 0)}`,
        });
        for (const p of status.partitions.filter((p) => p.role === 'source' && p.topic === settings.topic)) {
          let bar = partitionBars.get(p.partition);
          if (bar === undefined) {
            bar = bars.create(p.endOffset ?? 0, 0, { name: `partition ${String(p.partition).padEnd(2)}`, detail: '' });
            partitionBars.set(p.partition, bar);
          }
          bar.setTotal(p.endOffset ?? 0);
          bar.update(p.frontier ?? p.committed ?? 0, {
            detail: `| committed ${p.committed ?? '-'} | frontier ${p.frontier ?? '-'} | lag ${p.lag ?? '-'} | window ${p.window ?? 0} | blocked ${p.blockedLanes} | parked ${p.parked}`,
          });
        }
        return { finished, results };
      },
      ({ finished }) => stopped || finished >= orders.length,
      settings.timeoutMs,
      1_000,
    );
    bars.stop();
    if (stopped) {
      console.log('interrupted');
      return 130;
    }
    const completionGroup = completionGroupId(settings.group);
    const completion = await waitFor(() => behind(admin, completionGroup, settings.topic), ({ lag }) => lag === 0, 60_000);
    const results = await readResults(redis, run, orders);
    const check = checkRun(orders, { ...results, deadLetteredIds: deadLetters.ids });
    console.log(`\n${renderStatus(await readStatus({ group: settings.group, admin, store: new CompletionStore(redis) }))}`);
    console.log(summarize(check, { met: completion.met, lag: completion.value.lag }, results.retried, (Date.now() - started) / 1000, results.charged));
    const ok = check.ok && completion.met && progress.met;
    console.log(ok ? '\nrun checked: ok' : `\nrun checked: FAILED (serverless offline log: ${logFile})`);
    if (settings.keepDashboard) {
      console.log(`dashboard: still at ${dashboard.url}; Ctrl-C stops it`);
      await interrupted;
    }
    return ok ? 0 : 1;
  } finally {
    await dashboard?.close();
    if (offline !== undefined) {
      console.log('stopping serverless offline (in-flight invocations finish, offsets commit)');
      const code = await offline.stop();
      if (code !== 0) console.log(`serverless offline exited with ${code}`);
    }
    await deadLetters?.stop().catch(() => undefined);
    await admin.disconnect();
    redis.disconnect();
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
