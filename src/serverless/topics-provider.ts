import { getBootstrapBrokersFromAws, pickBootstrapBrokers, regionOfArn, type GetBootstrapBrokers, type MskListener } from '../connections/msk';
import { commonJsExports } from '../connections/interop';
import { deadlineSignal, untilAborted } from '../deadline';
import { ConfigError } from '../errors';
import { messageOf } from '../describe';
import { responseBody, sendResponse, type CustomResourceEvent, type CustomResourceOutcome } from './custom-resource';
import type { TopicsWorkRequest, TopicsWorkResult } from './topics-handler';
import { BROKERS_ATTRIBUTE, deleteOnRemove, TOPICS_WORKER_VARIABLE, topicsPhysicalId } from './topics-resource';

/**
 * The provider of a group's topics resource (`Custom::KafkaLanesTopics`): the function CloudFormation invokes, outside
 * any VPC (the provider pattern of AWS CDK's custom resources). It answers every request to its pre-signed S3 URL, asks
 * MSK's regional API for the cluster's brokers, and invokes the worker in the group's VPC (topics-handler.ts), which
 * talks to Kafka. Nothing it needs to answer is in the VPC, so no order of creation or deletion of the VPC's parts
 * (routes, endpoints, subnets) can keep it from answering: a `Delete` without `topics.deleteOnRemove` does not even
 * invoke the worker, and a failed worker on `Delete` is logged and answered SUCCESS.
 */

/** What the provider calls: replaceable in tests (the worker in process, MSK and CloudFormation stood in for). */
export interface TopicsProviderDeps {
  readonly getBootstrapBrokers?: GetBootstrapBrokers;
  /** Invokes the worker synchronously and returns its answer; throws when the invocation itself failed. */
  readonly invokeWorker?: (functionName: string, request: TopicsWorkRequest, signal: AbortSignal) => Promise<TopicsWorkResult>;
  /** The stack's status (`DescribeStacks`), to tell a rollback's `Update` from a user's. */
  readonly stackStatus?: (stackId: string) => Promise<string | undefined>;
  readonly log?: (line: Record<string, unknown>) => void;
}

/** A Lambda context's parts the provider reads. */
export interface ProviderContext {
  getRemainingTimeInMillis(): number;
  readonly logStreamName?: string;
}

/** Left to answer CloudFormation after the worker's answer (or the end of the wait for it). */
const ANSWER_MARGIN_MS = 10_000;

const LISTENERS: readonly MskListener[] = ['iam', 'scram', 'tls', 'plaintext'];

/**
 * The brokers of the resource's cluster: `Brokers` as given, else `GetBootstrapBrokers` of `Cluster` for `Listener`,
 * asked at every request (a cluster replaced by the stack has a new ARN, and its resource an `Update`).
 *
 * @throws ConfigError when the properties name neither, or the cluster has no such listener.
 */
export async function brokersOfProperties(properties: Readonly<Record<string, unknown>>, get: GetBootstrapBrokers): Promise<string[]> {
  const given = properties['Brokers'];
  if (typeof given === 'string' && given.trim() !== '') return given.split(',').map((broker) => broker.trim()).filter((broker) => broker !== '');
  const cluster = properties['Cluster'];
  if (typeof cluster !== 'string' || cluster === '') {
    throw new ConfigError(`Expected the topics resource's \`Brokers\` or \`Cluster\` (an MSK cluster ARN), got ${JSON.stringify({ Brokers: given, Cluster: cluster })}`);
  }
  const listener = String(properties['Listener'] ?? 'iam') as MskListener;
  if (!LISTENERS.includes(listener)) throw new ConfigError(`Expected the topics resource's \`Listener\` to be one of ${LISTENERS.join(', ')}, got ${JSON.stringify(listener)}`);
  return pickBootstrapBrokers(await get(cluster, regionOfArn(cluster)), listener, cluster);
}

const invokeWorkerOnAws: NonNullable<TopicsProviderDeps['invokeWorker']> = async (functionName, request, signal) => {
  const { LambdaClient, InvokeCommand } = commonJsExports(await import('@aws-sdk/client-lambda'), 'LambdaClient');
  const client = new LambdaClient({});
  try {
    const answer = await client.send(new InvokeCommand({ FunctionName: functionName, Payload: Buffer.from(JSON.stringify(request)) }), { abortSignal: signal });
    const text = answer.Payload === undefined ? '' : Buffer.from(answer.Payload).toString('utf8');
    if (answer.FunctionError !== undefined) {
      // Lambda's answer for an error the function did not catch (a timeout, a crash): `errorType` and `errorMessage`.
      const failure = (text === '' ? {} : JSON.parse(text)) as { errorType?: string; errorMessage?: string };
      throw new Error(`the topics worker \`${functionName}\` failed (${answer.FunctionError}): ${failure.errorType ?? 'Error'}: ${failure.errorMessage ?? text}`);
    }
    return JSON.parse(text) as TopicsWorkResult;
  } finally {
    client.destroy();
  }
};

const stackStatusOnAws: NonNullable<TopicsProviderDeps['stackStatus']> = async (stackId) => {
  const { CloudFormationClient, DescribeStacksCommand } = commonJsExports(await import('@aws-sdk/client-cloudformation'), 'CloudFormationClient');
  const client = new CloudFormationClient({});
  try {
    return (await client.send(new DescribeStacksCommand({ StackName: stackId }))).Stacks?.[0]?.StackStatus;
  } finally {
    client.destroy();
  }
};

/**
 * Creates the provider's handler: answers every request to its ResponseURL (see custom-resource.ts) and returns the
 * answer. The worker's function name comes from `KAFKA_LANES_TOPICS_WORKER`, which the plugin sets.
 *
 * @example
 * // what the plugin deploys as `<function>Topics`, the ServiceToken of `Custom::KafkaLanesTopics`:
 * export const handler = topicsProviderHandler();
 */
export function topicsProviderHandler(
  env: Readonly<Record<string, string | undefined>> = process.env,
  deps: TopicsProviderDeps = {},
): (event: CustomResourceEvent, context?: ProviderContext) => Promise<CustomResourceOutcome> {
  const parts: ProviderParts = {
    log: deps.log ?? ((line) => console.log(JSON.stringify(line))),
    invoke: deps.invokeWorker ?? invokeWorkerOnAws,
    getBrokers: deps.getBootstrapBrokers ?? getBootstrapBrokersFromAws,
    stackStatus: deps.stackStatus ?? stackStatusOnAws,
    worker: () => {
      const name = env[TOPICS_WORKER_VARIABLE];
      if (name === undefined || name === '') throw new ConfigError(`Expected ${TOPICS_WORKER_VARIABLE} (the topics worker's function name) in the environment of the topics provider, got none`);
      return name;
    },
  };
  const { log } = parts;

  return async (event, context) => {
    const budgetMs = Math.max(1_000, (context?.getRemainingTimeInMillis() ?? 300_000) - ANSWER_MARGIN_MS);
    const group = typeof event.ResourceProperties?.['Group'] === 'string' ? String(event.ResourceProperties['Group']) : '';
    // Stable while the group is (a new group is a new resource: CloudFormation then sends the old one a `Delete`); a
    // failed `Update` keeps the one it had.
    const physicalResourceId = event.PhysicalResourceId ?? topicsPhysicalId(group || event.LogicalResourceId);
    let outcome: CustomResourceOutcome;
    try {
      outcome = await untilAborted(
        work(parts, event, { budgetMs, physicalResourceId: event.RequestType !== 'Delete' && group !== '' ? topicsPhysicalId(group) : physicalResourceId }),
        deadlineSignal(budgetMs),
        () => new Error(`no answer from the topics worker within ${Math.round(budgetMs / 1000)} s (the provider's timeout less the time to answer)`),
      );
    } catch (error) {
      const where = context?.logStreamName === undefined ? '' : ` (provider log stream ${context.logStreamName})`;
      outcome =
        event.RequestType === 'Delete'
          ? { status: 'SUCCESS', physicalResourceId }
          : { status: 'FAILED', physicalResourceId, reason: `kafka-lanes could not ensure the topics of group \`${group}\`: ${messageOf(error)}${where}` };
      log({ level: 'ERROR', message: 'topics not ensured', group, reason: outcome.reason ?? messageOf(error) });
    }
    await sendResponse(event.ResponseURL, responseBody(event, outcome));
    return outcome;
  };
}

/** What the provider works with: its log, the worker's invocation and name, MSK's brokers, the stack's status. */
interface ProviderParts {
  readonly log: NonNullable<TopicsProviderDeps['log']>;
  readonly invoke: NonNullable<TopicsProviderDeps['invokeWorker']>;
  readonly getBrokers: GetBootstrapBrokers;
  readonly stackStatus: NonNullable<TopicsProviderDeps['stackStatus']>;
  /** The worker's function name (`KAFKA_LANES_TOPICS_WORKER`), or why it is missing. */
  readonly worker: () => string;
}

/** One request's work: the worker invoked with the brokers (a `Delete` only when `DeleteOnRemove` asks it). */
async function work(parts: ProviderParts, event: CustomResourceEvent, answer: { budgetMs: number; physicalResourceId: string }): Promise<CustomResourceOutcome> {
  const { budgetMs, physicalResourceId } = answer;
  const properties = event.ResourceProperties;
  if (event.RequestType === 'Delete') {
    if (!deleteOnRemove(properties)) return { status: 'SUCCESS', physicalResourceId };
    try {
      const brokers = await brokersOfProperties(properties, parts.getBrokers);
      const answered = await parts.invoke(parts.worker(), { RequestType: 'Delete', ResourceProperties: properties, brokers, budgetMs }, deadlineSignal(budgetMs));
      if (answered.status === 'FAILED') throw new Error(answered.reason);
    } catch (error) {
      // A stack being deleted (or rolled back) is never stuck on topics it could not delete: said, and answered.
      parts.log({ level: 'ERROR', message: 'topics not deleted', group: properties['Group'], reason: messageOf(error) });
    }
    return { status: 'SUCCESS', physicalResourceId };
  }
  const brokers = await brokersOfProperties(properties, parts.getBrokers);
  const dropsTiers =
    event.RequestType === 'Update' &&
    (Array.isArray(event.OldResourceProperties?.['Tiers']) ? (event.OldResourceProperties['Tiers'] as unknown[]) : []).some(
      (tier) => !(Array.isArray(properties['Tiers']) ? (properties['Tiers'] as unknown[]) : []).includes(tier),
    );
  const rollback = dropsTiers ? await rollingBack(parts, event) : false;
  const request: TopicsWorkRequest = {
    RequestType: event.RequestType,
    ResourceProperties: properties,
    ...(event.OldResourceProperties === undefined ? {} : { OldResourceProperties: event.OldResourceProperties }),
    brokers,
    ...(rollback ? { rollback } : {}),
    budgetMs,
  };
  const answered = await parts.invoke(parts.worker(), request, deadlineSignal(budgetMs));
  if (answered.status === 'FAILED') throw new Error(answered.reason);
  parts.log({ level: 'INFO', message: 'topics ensured', group: properties['Group'], actions: answered.actions });
  return { status: 'SUCCESS', physicalResourceId, data: { [BROKERS_ATTRIBUTE]: brokers.join(',') } };
}

/** A rollback's `Update`: CloudFormation puts back the properties of before, and a refusal would fail the rollback. */
async function rollingBack(parts: ProviderParts, event: CustomResourceEvent): Promise<boolean> {
  try {
    return (await parts.stackStatus(event.StackId))?.endsWith('ROLLBACK_IN_PROGRESS') === true;
  } catch (error) {
    // Not known: the dropped-tier check applies as for a user's update (docs/deploy.md gives the command that ends
    // a rollback it would stop).
    parts.log({ level: 'WARN', message: 'stack status not read: a dropped retry tier is checked as in an update', reason: messageOf(error) });
    return false;
  }
}

// Built on the first request so that importing this module (tests, the plugin) reads no environment.
let deployed: ReturnType<typeof topicsProviderHandler> | undefined;

/** The Lambda handler the plugin deploys as the topics resource's ServiceToken. */
export const handler = async (event: CustomResourceEvent, context?: ProviderContext): Promise<CustomResourceOutcome> => {
  deployed ??= topicsProviderHandler();
  return deployed(event, context);
};
