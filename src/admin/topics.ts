import { ConfigResourceTypes, type Admin, type ITopicConfig } from 'kafkajs';
import { ConfigError, LanesError } from '../errors';
import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_NAME_LENGTH, MAX_REASON_LENGTH } from '../handoff/headers';
import { DEFAULTS, deadLetterTopic, parseDuration, retryTopics, topicNameProblem } from '../options';
import { TOPIC_NAME } from '../options/constants';
import { createTopicsReady, waitForTopicsReady } from './create-topics';

/**
 * `kafka-lanes topics ensure`: creates or checks a group's source topics and its retry and dead-letter
 * topics (docs/ARCHITECTURE.md, "Copies and their headers"). Planning is pure (`planSourceTopics`, `planDerivedTopics`); `ensureTopics`
 * reads the cluster, applies the plan and waits until every created partition can be written.
 */

/** A source topic as asked for: `orders` (must exist) or `orders:6` (created with, or grown to, 6 partitions). */
export interface TopicRequest {
  readonly topic: string;
  readonly partitions?: number;
}

/** What the cluster says about one topic. */
export interface TopicState {
  readonly topic: string;
  readonly partitions: number;
  /** `retention.ms` (-1: unlimited). */
  readonly retentionMs: number;
  readonly maxMessageBytes: number;
  /** `cleanup.policy`: `delete`, `compact` or `compact,delete`. */
  readonly cleanupPolicy: string;
}

export type TopicRole = 'source' | 'retry' | 'dead-letter' | 'output';

export type TopicAction =
  | { readonly kind: 'create'; readonly role: TopicRole; readonly topic: string; readonly partitions: number; readonly config: Readonly<Record<string, string>> }
  | { readonly kind: 'add-partitions'; readonly role: TopicRole; readonly topic: string; readonly from: number; readonly to: number }
  | { readonly kind: 'ok'; readonly role: TopicRole; readonly topic: string; readonly partitions: number };

export interface TopicsPlan {
  readonly actions: readonly TopicAction[];
  /** Why the topics cannot be used as they are; nothing is changed when there is any. */
  readonly problems: readonly string[];
}

/**
 * Bytes a retry or dead-letter copy may add to its record: its `lanes-copy` header at its longest (error message,
 * class and reason are cut to a length in UTF-16 units, at most 3 UTF-8 bytes each, and the whole value to
 * `MAX_COPY_HEADER_BYTES`; the origin topic name; the other facts, short numbers and fixed words, with their field
 * names) plus the record's own framing, rounded up generously: a copy the retry topic refuses stalls its lane
 * (issue 7), a few KB cost nothing. Copies of the previous release carried the same facts in eleven headers, within
 * the same bound.
 */
export const COPY_HEADROOM_BYTES =
  Math.ceil((3 * (MAX_ERROR_MESSAGE_LENGTH + MAX_ERROR_NAME_LENGTH + MAX_REASON_LENGTH) + TOPIC_NAME.maxLength + 12 * 64 + 512) / 1024) * 1024 +
  4 * 1024;

/** Retry topics keep a record at least this much longer than the longest tier's delay. */
export const RETENTION_HEADROOM_MS = 60 * 60 * 1000;

export const TOPICS_DEFAULTS = {
  /** Kafka's own default: room for the retry function to be down for days without losing a copy. */
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  /** How long created partitions may take to become writable. */
  readyTimeoutMs: 60_000,
} as const;

/**
 * Parses `name` or `name:partitions` from the command line.
 *
 * @throws ConfigError naming what was expected and what was given.
 * @example
 * parseTopicRequest('orders:6'); // { topic: 'orders', partitions: 6 }
 */
export function parseTopicRequest(text: string, flag = '--topic'): TopicRequest {
  const cut = text.lastIndexOf(':');
  const topic = cut < 0 ? text : text.slice(0, cut);
  const problem = topicNameProblem(topic);
  if (problem !== undefined) throw new ConfigError(`Expected a topic name in \`${flag} ${text}\`, but ${problem}`);
  if (cut < 0) return { topic };
  const count = text.slice(cut + 1);
  const partitions = Number(count);
  if (!/^[0-9]+$/.test(count) || !Number.isSafeInteger(partitions) || partitions < 1) {
    throw new ConfigError(`Expected \`${flag} <name>[:<partitions>]\` with a positive integer of partitions, got \`${text}\``);
  }
  return { topic, partitions };
}

/** Creates missing source topics, grows ones with fewer partitions than asked; more is a problem (Kafka cannot shrink). */
export function planSourceTopics(requests: readonly TopicRequest[], existing: ReadonlyMap<string, TopicState>): TopicsPlan {
  const actions: TopicAction[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { topic, partitions } of requests) {
    if (seen.has(topic)) {
      problems.push(`Topic \`${topic}\` is given twice`);
      continue;
    }
    seen.add(topic);
    const state = existing.get(topic);
    if (state === undefined) {
      if (partitions === undefined) problems.push(`Source topic \`${topic}\` does not exist; give \`${topic}:<partitions>\` to create it`);
      else actions.push({ kind: 'create', role: 'source', topic, partitions, config: {} });
    } else if (partitions === undefined || partitions === state.partitions) {
      actions.push({ kind: 'ok', role: 'source', topic, partitions: state.partitions });
    } else if (partitions > state.partitions) {
      actions.push({ kind: 'add-partitions', role: 'source', topic, from: state.partitions, to: partitions });
    } else {
      problems.push(
        `Source topic \`${topic}\` has ${state.partitions} partitions, asked for ${partitions}: Kafka cannot remove partitions ` +
          `(ask for ${state.partitions}, or leave the count out to keep it)`,
      );
    }
  }
  return { actions, problems };
}

/**
 * The declared output topics (`kafkaLanes.outputs`, `--output`): created when missing, with the partitions asked
 * for or `partitions` (the most of any source), and the broker's defaults for everything else (downstream owns
 * their settings); an existing one is left as it is, whatever its partitions.
 */
export function planOutputTopics(requests: readonly TopicRequest[], existing: ReadonlyMap<string, TopicState>, partitions: number): TopicsPlan {
  const actions: TopicAction[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const request of requests) {
    if (seen.has(request.topic)) {
      problems.push(`Output topic \`${request.topic}\` is given twice`);
      continue;
    }
    seen.add(request.topic);
    const state = existing.get(request.topic);
    if (state === undefined) actions.push({ kind: 'create', role: 'output', topic: request.topic, partitions: request.partitions ?? partitions, config: {} });
    else actions.push({ kind: 'ok', role: 'output', topic: request.topic, partitions: state.partitions });
  }
  return { actions, problems };
}

export interface DerivedTopicsInput {
  readonly group: string;
  readonly tiers: readonly string[];
  /** The source topics as they are (after their own plan was applied). */
  readonly sources: readonly TopicState[];
  /** Partitions of a retry or dead-letter topic that does not exist yet; default: the most of any source. */
  readonly partitions?: number;
  /** `retention.ms` of a created retry or dead-letter topic; default 7 days. */
  readonly retentionMs?: number;
}

/**
 * The retry tiers' topics `<group>.retry.<tier>` and the dead-letter topic `<group>.dlq`: created when missing
 * with a retention longer than the longest delay and a `max.message.bytes` that fits any source record plus
 * the `lanes-*` headers; an existing one that would lose copies (too short a retention, compaction) or refuse
 * them (too small a `max.message.bytes`) is a problem.
 */
export function planDerivedTopics(input: DerivedTopicsInput, existing: ReadonlyMap<string, TopicState>): TopicsPlan {
  const actions: TopicAction[] = [];
  const problems: string[] = [];
  const tiers = retryTopics(input.group, input.tiers);
  const longest = Math.max(...tiers.map((tier) => tier.delayMs));
  const longestTier = tiers.find((tier) => tier.delayMs === longest)?.tier ?? '';
  const minRetentionMs = longest + RETENTION_HEADROOM_MS;
  const retentionMs = input.retentionMs ?? Math.max(TOPICS_DEFAULTS.retentionMs, minRetentionMs);
  if (retentionMs !== -1 && retentionMs < minRetentionMs) {
    problems.push(
      `Expected a retention of at least ${formatMs(minRetentionMs)} (the longest retry tier, \`${longestTier}\`, plus ` +
        `${formatMs(RETENTION_HEADROOM_MS)}), got ${formatMs(retentionMs)}`,
    );
  }
  const largestSource = input.sources.reduce((largest, source) => Math.max(largest, source.maxMessageBytes), 0);
  const maxMessageBytes = largestSource + COPY_HEADROOM_BYTES;
  const partitions = input.partitions ?? input.sources.reduce((most, source) => Math.max(most, source.partitions), 1);
  const config = { 'retention.ms': String(retentionMs), 'max.message.bytes': String(maxMessageBytes), 'cleanup.policy': 'delete' };

  const derived: Array<{ topic: string; role: TopicRole }> = [
    ...tiers.map((tier) => ({ topic: tier.topic, role: 'retry' as const })),
    { topic: deadLetterTopic(input.group), role: 'dead-letter' },
  ];
  for (const { topic, role } of derived) {
    const problem = topicNameProblem(topic);
    if (problem !== undefined) {
      problems.push(`The ${role} topic name \`${topic}\` is not valid: ${problem}`);
      continue;
    }
    const state = existing.get(topic);
    if (state === undefined) {
      actions.push({ kind: 'create', role, topic, partitions, config });
      continue;
    }
    if (state.cleanupPolicy.split(',').map((policy) => policy.trim()).includes('compact')) {
      problems.push(
        `The ${role} topic \`${topic}\` has \`cleanup.policy=${state.cleanupPolicy}\`: compaction keeps only the last record ` +
          'of each key and would drop copies; expected `delete`',
      );
    }
    if (role === 'retry' && state.retentionMs !== -1 && state.retentionMs < minRetentionMs) {
      problems.push(
        `The retry topic \`${topic}\` keeps records ${formatMs(state.retentionMs)} (\`retention.ms=${state.retentionMs}\`): it would ` +
          `lose copies waiting for the longest retry tier \`${longestTier}\`; expected at least ${formatMs(minRetentionMs)} ` +
          `(\`retention.ms=${minRetentionMs}\`)`,
      );
    }
    if (state.maxMessageBytes < maxMessageBytes) {
      problems.push(
        `The ${role} topic \`${topic}\` accepts records up to ${state.maxMessageBytes} bytes (\`max.message.bytes\`): a copy of ` +
          `the largest source record (${largestSource} bytes) with its \`lanes-*\` headers would be refused; expected at least ` +
          `${maxMessageBytes}`,
      );
    }
    actions.push({ kind: 'ok', role, topic, partitions: state.partitions });
  }
  return { actions, problems };
}

/** What `ensureTopics` found and did. */
export interface EnsureTopicsResult {
  readonly actions: readonly TopicAction[];
  /** Every topic of the group as it is now. */
  readonly topics: readonly TopicState[];
}

export interface EnsureTopicsOptions {
  readonly group: string;
  readonly topics: readonly TopicRequest[];
  /** Output topics the handler writes with `ctx.send` (`kafkaLanes.outputs`): created when missing, else left as they are. */
  readonly outputs?: readonly TopicRequest[];
  /** Retry tiers; default `['5s', '1m', '10m']`. */
  readonly tiers?: readonly string[];
  /** Partitions of created retry and dead-letter topics; default the most of any source topic. */
  readonly retryPartitions?: number;
  /** `retention.ms` of created retry and dead-letter topics; default 7 days. */
  readonly retentionMs?: number;
  /** Replication factor of created topics; default the broker's `default.replication.factor`. */
  readonly replicationFactor?: number;
  readonly readyTimeoutMs?: number;
}

/**
 * Creates or checks the source, retry and dead-letter topics of a group; returns once every partition of every
 * created topic has a leader that serves it. Nothing is created when any topic has a problem.
 *
 * @throws ConfigError listing every problem (one per line): a topic that would lose or refuse records.
 * @example
 * const admin = kafka.admin();
 * await admin.connect();
 * await ensureTopics(admin, { group: 'orders-svc', topics: [{ topic: 'orders', partitions: 6 }], tiers: ['5s', '1m'] });
 * // orders (6 partitions), orders-svc.retry.5s, orders-svc.retry.1m, orders-svc.dlq
 */
export async function ensureTopics(admin: Admin, options: EnsureTopicsOptions): Promise<EnsureTopicsResult> {
  const groupProblem = topicNameProblem(deadLetterTopic(options.group));
  if (groupProblem !== undefined) throw new ConfigError(`Expected a group whose topic names are valid, got \`${options.group}\`: ${groupProblem}`);
  if (options.topics.length === 0) throw new ConfigError('Expected at least one source topic (`--topic <name>[:<partitions>]`), got none');
  const tiers = options.tiers ?? DEFAULTS.retry.tiers;
  if (tiers.length === 0) throw new ConfigError('Expected at least one retry tier (`--tiers 5s,1m,10m`), got none');
  const delays = tiers.map(parseDuration);
  if (delays.some((ms, index) => index > 0 && ms <= (delays[index - 1] ?? 0))) {
    throw new ConfigError(`Expected retry tiers with strictly ascending delays, got ${tiers.join(',')}`);
  }
  const derivedNames = [...retryTopics(options.group, tiers).map((tier) => tier.topic), deadLetterTopic(options.group)];
  const sourceNames = options.topics.map((request) => request.topic);
  const outputs = options.outputs ?? [];
  const outputNames = outputs.map((request) => request.topic);
  const clash = outputNames.find((name) => sourceNames.includes(name) || derivedNames.includes(name));
  if (clash !== undefined) throw new ConfigError(`Expected output topics apart from the group's source, retry and dead-letter topics, got \`${clash}\` among both`);

  const before = await describeTopics(admin, [...sourceNames, ...derivedNames, ...outputNames]);
  const sourcePlan = planSourceTopics(options.topics, before);
  if (sourcePlan.problems.length > 0) throw new ConfigError(sourcePlan.problems.join('\n'));
  // Derived topics are planned against the sources as they are once the sources' plan is applied (a source
  // created here takes the broker's `max.message.bytes`, which only the broker knows); they are checked against
  // the existing sources first, so that a problem there changes nothing.
  const existingSources = sourceNames.flatMap((name) => before.get(name) ?? []);
  const early = planDerivedTopics({ group: options.group, tiers, sources: existingSources, ...retryOptions(options) }, before);
  const problems = [...early.problems, ...planOutputTopics(outputs, before, 1).problems];
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));

  await applyPlan(admin, sourcePlan.actions, options);
  const sources = await describeTopics(admin, sourceNames);
  const derivedPlan = planDerivedTopics(
    { group: options.group, tiers, sources: sourceNames.flatMap((name) => sources.get(name) ?? []), ...retryOptions(options) },
    await describeTopics(admin, derivedNames),
  );
  if (derivedPlan.problems.length > 0) throw new ConfigError(derivedPlan.problems.join('\n'));
  const outputPlan = planOutputTopics(outputs, before, options.retryPartitions ?? Math.max(1, ...[...sources.values()].map((source) => source.partitions)));
  await applyPlan(admin, [...derivedPlan.actions, ...outputPlan.actions], options);

  const after = await describeTopics(admin, [...sourceNames, ...derivedNames, ...outputNames]);
  return { actions: [...sourcePlan.actions, ...derivedPlan.actions, ...outputPlan.actions], topics: [...after.values()] };
}

function retryOptions(options: EnsureTopicsOptions): { partitions?: number; retentionMs?: number } {
  return {
    ...(options.retryPartitions === undefined ? {} : { partitions: options.retryPartitions }),
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
  };
}

async function applyPlan(admin: Admin, actions: readonly TopicAction[], options: EnsureTopicsOptions): Promise<void> {
  const creates = actions.flatMap((action) => (action.kind === 'create' ? [action] : []));
  const grows = actions.flatMap((action) => (action.kind === 'add-partitions' ? [action] : []));
  const timeoutMs = options.readyTimeoutMs ?? TOPICS_DEFAULTS.readyTimeoutMs;
  if (creates.length > 0) {
    const topics: ITopicConfig[] = creates.map((action) => ({
      topic: action.topic,
      numPartitions: action.partitions,
      ...(options.replicationFactor === undefined ? {} : { replicationFactor: options.replicationFactor }),
      configEntries: Object.entries(action.config).map(([name, value]) => ({ name, value })),
    }));
    // kafkajs' own wait (`waitForLeaders`) gives up on UNKNOWN_TOPIC_OR_PARTITION, which a KRaft broker
    // answers for a moment after creating a topic; `createTopicsReady` waits for it to pass.
    await createTopicsReady(admin, topics, { timeoutMs });
  }
  if (grows.length > 0) {
    await admin.createPartitions({ topicPartitions: grows.map((action) => ({ topic: action.topic, count: action.to })) });
    await waitForTopicsReady(admin, grows.map((action) => ({ topic: action.topic, numPartitions: action.to })), { timeoutMs });
  }
}

/** The topics among `names` that exist, with their partition count and the configs the plan checks. */
export async function describeTopics(admin: Admin, names: readonly string[]): Promise<Map<string, TopicState>> {
  const listed = new Set(await admin.listTopics());
  const present = [...new Set(names)].filter((name) => listed.has(name));
  const states = new Map<string, TopicState>();
  if (present.length === 0) return states;
  const [metadata, configs] = await Promise.all([
    admin.fetchTopicMetadata({ topics: present }),
    admin.describeConfigs({
      includeSynonyms: false,
      resources: present.map((name) => ({
        type: ConfigResourceTypes.TOPIC,
        name,
        configNames: ['retention.ms', 'max.message.bytes', 'cleanup.policy'],
      })),
    }),
  ]);
  const partitions = new Map(metadata.topics.map((topic) => [topic.name, topic.partitions.length]));
  for (const resource of configs.resources) {
    const value = (name: string): string | undefined => resource.configEntries.find((entry) => entry.configName === name)?.configValue;
    const retentionMs = Number(value('retention.ms'));
    const maxMessageBytes = Number(value('max.message.bytes'));
    if (!Number.isSafeInteger(retentionMs) || !Number.isSafeInteger(maxMessageBytes)) {
      throw new LanesError(`Expected the configs of topic \`${resource.resourceName}\` to hold retention.ms and max.message.bytes, got ${JSON.stringify(resource.configEntries)}`);
    }
    states.set(resource.resourceName, {
      topic: resource.resourceName,
      partitions: partitions.get(resource.resourceName) ?? 0,
      retentionMs,
      maxMessageBytes,
      cleanupPolicy: value('cleanup.policy') ?? 'delete',
    });
  }
  return states;
}

/** `604800000` -> `7d`, `4200000` -> `1h 10m`: durations in messages a person reads. */
export function formatMs(ms: number): string {
  if (ms === -1) return 'forever';
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000], ['ms', 1]];
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${count}${unit}`);
    rest -= count * size;
  }
  return parts.length === 0 ? '0ms' : parts.join(' ');
}
