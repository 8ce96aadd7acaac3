import type { Admin } from 'kafkajs';
import { describeConnectionError } from './connection-errors';
import { messageOf } from '../describe';
import { evictionProblem, type RedisServer } from '../completion/redis-server';
import { redisUsesTls } from '../connections/redis';
import { deadLetterTopic, retryTopics } from '../options';
import type { KafkaOptions, RedisOptions } from '../options/lanes-options';
import type { Check, CheckStatus } from './check';
import { describeGroupUse, groupChecks, ownGroups } from './doctor-groups';
import { describeTopics, formatMs, RETENTION_HEADROOM_MS, type TopicState } from './topics';

/**
 * `kafka-lanes doctor`: checks a group's deployment from where the operator stands. Each check is one row; the
 * deciding logic is pure (`topicChecks`, `evictionCheck`, `clusterModeCheck`), the probes are thin shells.
 */

const RANK: Readonly<Record<CheckStatus, number>> = { ok: 0, warn: 1, fail: 2 };

/** `TLS, SASL scram-sha-512`: how the clients authenticate to Kafka, as the options resolve it. */
export function describeKafkaAuth(kafka: KafkaOptions): string {
  const sasl =
    kafka.sasl === undefined ? 'no SASL' : kafka.sasl.mechanism === 'aws-iam' ? 'MSK IAM' : `SASL ${kafka.sasl.mechanism}${'secret' in kafka.sasl ? ' (secret)' : ''}`;
  return `${kafka.ssl ? 'TLS' : 'no TLS'}, ${sasl}`;
}

/** `TLS, AUTH as ops`: how the clients reach Redis. */
export function describeRedisAuth(redis: RedisOptions): string {
  const secret = redis.passwordSecret === undefined ? '' : ' (secret)';
  const auth = redis.password === undefined && secret === '' ? 'no AUTH' : redis.username === undefined ? `AUTH${secret}` : `AUTH as ${redis.username}${secret}`;
  return `${redisUsesTls(redis) ? 'TLS' : 'no TLS'}, ${auth}`;
}

export interface TopicsInput {
  readonly group: string;
  /** The source topics; none given is a warning, not a failure (doctor cannot guess them). */
  readonly sources: readonly string[];
  readonly tiers: readonly string[];
  /** The declared output topics (`kafkaLanes.outputs`): each must exist. */
  readonly outputs?: readonly string[];
}

/**
 * Pure: one row per topic of the group. Source topics must exist; retry and dead-letter topics must exist and keep
 * records at least as long as the longest tier (a copy waiting for it would be deleted first). Below the longest
 * tier plus the headroom `topics ensure` asks for is a warning.
 */
export function topicChecks(input: TopicsInput, states: ReadonlyMap<string, TopicState>): Check[] {
  const rows: Check[] = [];
  if (input.sources.length === 0) {
    rows.push({ name: 'source topic', status: 'warn', detail: 'not checked: give `--topic <name>` (or KAFKA_LANES_TOPICS)' });
  }
  for (const topic of input.sources) {
    const state = states.get(topic);
    rows.push(state === undefined
      ? { name: `topic ${topic}`, status: 'fail', detail: `source topic \`${topic}\` does not exist` }
      : { name: `topic ${topic}`, status: 'ok', detail: `source, ${state.partitions} partitions` });
  }
  for (const topic of input.outputs ?? []) {
    const state = states.get(topic);
    rows.push(state === undefined
      ? { name: `topic ${topic}`, status: 'fail', detail: `output topic \`${topic}\` does not exist (the stack's topics resource or \`topics ensure --output\` creates it): ctx.send to it fails every record` }
      : { name: `topic ${topic}`, status: 'ok', detail: `output, ${state.partitions} partitions` });
  }
  const tiers = retryTopics(input.group, input.tiers);
  const longest = tiers.reduce((most, tier) => (tier.delayMs > most.delayMs ? tier : most), tiers[0] ?? { tier: '0s', delayMs: 0 });
  const derived = [...tiers.map((tier) => ({ topic: tier.topic, role: `retry tier ${tier.tier}` })), { topic: deadLetterTopic(input.group), role: 'dead-letter' }];
  for (const { topic, role } of derived) {
    const name = `topic ${topic}`;
    const state = states.get(topic);
    if (state === undefined) {
      rows.push({ name, status: 'fail', detail: `${role} topic \`${topic}\` does not exist (\`kafka-lanes topics ensure\` creates it)` });
      continue;
    }
    const kept = `${role}, ${state.partitions} partitions, retention.ms=${state.retentionMs} (${formatMs(state.retentionMs)})`;
    if (state.retentionMs !== -1 && state.retentionMs < longest.delayMs) {
      rows.push({
        name, status: 'fail',
        detail: `${kept} is shorter than the longest retry tier \`${longest.tier}\` (${longest.delayMs} ms): copies waiting for it are deleted first`,
      });
    } else if (state.retentionMs !== -1 && state.retentionMs < longest.delayMs + RETENTION_HEADROOM_MS) {
      rows.push({ name, status: 'warn', detail: `${kept}: less than the longest tier \`${longest.tier}\` plus ${formatMs(RETENTION_HEADROOM_MS)} of headroom` });
    } else {
      rows.push({ name, status: 'ok', detail: kept });
    }
  }
  return rows;
}

/**
 * Connects `admin` (built with the configured auth and a short timeout), describes the cluster, then the group's
 * topics, then its consumer group ids (`groupChecks`). An unreachable cluster is one failed row; its topics and
 * groups are not checked.
 */
export async function checkKafka(admin: Admin, input: TopicsInput & { readonly auth: string }): Promise<Check[]> {
  let brokers: Check;
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    const hosts = cluster.brokers.map((broker) => `${broker.host}:${broker.port}`).join(', ');
    brokers = { name: 'brokers', status: 'ok', detail: `${cluster.brokers.length} reachable (${hosts}) with ${input.auth}` };
  } catch (error) {
    return [{ name: 'brokers', status: 'fail', detail: `not reachable with ${input.auth}: ${describeConnectionError(error)}` }];
  }
  const names = [...input.sources, ...(input.outputs ?? []), ...retryTopics(input.group, input.tiers).map((tier) => tier.topic), deadLetterTopic(input.group)];
  let topics: Check[];
  try {
    topics = topicChecks(input, await describeTopics(admin, names));
  } catch (error) {
    topics = [{ name: 'topics', status: 'fail', detail: `could not be described: ${messageOf(error)}` }];
  }
  let groups: Check[];
  try {
    groups = groupChecks(input, await describeGroupUse(admin, ownGroups(input).map((own) => own.id)));
  } catch (error) {
    groups = [{ name: 'groups', status: 'fail', detail: `could not be described (an ACL without DescribeGroup?): ${messageOf(error)}` }];
  }
  return [brokers, ...topics, ...groups];
}

/**
 * Pure: whether a `maxmemory-policy` keeps kafka-lanes' state. `allkeys-*` evicts it (fails); `volatile-*` leaves
 * it (its keys carry no TTL) but evicts other keys of the same Redis and is not what kafka-lanes is tested with.
 */
export function evictionCheck(policy: string | undefined): Check {
  const name = 'maxmemory-policy';
  if (policy === undefined) return { name, status: 'warn', detail: 'not found in INFO memory' };
  const problem = evictionProblem(policy);
  if (problem !== undefined) return { name, status: 'fail', detail: problem };
  if (policy.startsWith('volatile-')) {
    return { name, status: 'warn', detail: `\`${policy}\`: kafka-lanes keys carry no TTL and are kept, but \`noeviction\` is expected on a Redis of its own` };
  }
  return { name, status: 'ok', detail: `\`${policy}\`` };
}

/** Pure: whether `INFO cluster` agrees with the configured mode (`--redis-cluster-nodes` or one URL). */
export function clusterModeCheck(configured: 'cluster' | 'standalone', info: string): Check {
  const name = 'redis mode';
  const enabled = /^cluster_enabled:(\d)/m.exec(info)?.[1];
  if (enabled === undefined) return { name, status: 'warn', detail: 'INFO cluster has no cluster_enabled line' };
  const actual = enabled === '1' ? 'cluster' : 'standalone';
  if (actual === configured) return { name, status: 'ok', detail: `${actual}, as configured` };
  const expected = configured === 'cluster' ? 'a Redis Cluster (`--redis-cluster-nodes`)' : 'one Redis server (`--redis-url`)';
  return { name, status: 'fail', detail: `configured for ${expected}, but INFO cluster says cluster_enabled:${enabled} (${actual})` };
}

const PINGS = 5;

/** PINGs Redis (round trip in ms, median of five), then reads its eviction policy and cluster mode. */
export async function checkRedis(
  /** The server's door (`store.server()`). */
  server: Pick<RedisServer, 'ping' | 'evictionPolicies' | 'clusterInfo'>,
  configured: 'cluster' | 'standalone',
  auth: string,
  /** Words for a failed PING (default: the error's message); `watchConnection(store).explain` names a refused port. */
  explain: (error: unknown) => string = messageOf,
): Promise<Check[]> {
  const rounds: number[] = [];
  try {
    for (let i = 0; i < PINGS; i += 1) {
      const start = performance.now();
      await server.ping();
      rounds.push(performance.now() - start);
    }
  } catch (error) {
    return [{ name: 'redis', status: 'fail', detail: `not reachable with ${auth}: ${explain(error)}` }];
  }
  const median = [...rounds].sort((a, b) => a - b)[Math.floor(PINGS / 2)] ?? 0;
  const rows: Check[] = [{ name: 'redis', status: 'ok', detail: `PING round trip ${median.toFixed(1)} ms (median of ${PINGS}) with ${auth}` }];
  try {
    // Every master of a cluster holds state; the worst policy among them decides.
    const policies = (await server.evictionPolicies()).map(evictionCheck);
    rows.push(policies.reduce((worst, row) => (RANK[row.status] > RANK[worst.status] ? row : worst)));
    rows.push(clusterModeCheck(configured, await server.clusterInfo()));
  } catch (error) {
    rows.push({ name: 'redis INFO', status: 'warn', detail: `not readable (an ACL without INFO?): ${messageOf(error)}` });
  }
  return rows;
}

/** The rows as an aligned table, then a summary line. */
export function renderChecks(checks: readonly Check[]): string {
  const width = Math.max(...checks.map((check) => check.name.length), 5);
  const lines = checks.map((check) => `${check.status.toUpperCase().padEnd(4)}  ${check.name.padEnd(width)}  ${check.detail}`);
  const count = (status: CheckStatus): number => checks.filter((check) => check.status === status).length;
  return `${['      ' + 'CHECK'.padEnd(width) + '  DETAIL', ...lines].join('\n')}\n${count('ok')} ok, ${count('warn')} warnings, ${count('fail')} failed\n`;
}
