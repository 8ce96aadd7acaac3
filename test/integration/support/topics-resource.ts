/**
 * The topics resource as CloudFormation and Lambda run it, in one process: the provider (topics-provider.ts) answers
 * to a local ResponseURL, and its synchronous invocation of the worker (topics-handler.ts) is a call through JSON, as
 * Lambda's Invoke carries it. The worker talks to the real broker; only the AWS APIs are stood in for.
 */
import { topicsProviderHandler, type TopicsProviderDeps } from '../../../src/serverless/topics-provider';
import { topicsWorkerHandler, type TopicsWorkRequest, type TopicsWorkResult } from '../../../src/serverless/topics-handler';
import type { GetBootstrapBrokers } from '../../../src/connections/msk';

export interface InProcessOptions {
  /** The worker's environment (the group's Kafka auth, as the plugin writes it). */
  readonly workerEnv: Record<string, string>;
  /** Each MSK cluster ARN's brokers (`GetBootstrapBrokers` stood in for), for properties naming a `Cluster`. */
  readonly clusters?: Record<string, string>;
  /** The stack's status `DescribeStacks` answers. */
  readonly stackStatus?: string;
  readonly log?: (line: Record<string, unknown>) => void;
  /** Every request the worker got. */
  readonly requests?: TopicsWorkRequest[];
}

export function topicsResourceInProcess(options: InProcessOptions): ReturnType<typeof topicsProviderHandler> {
  const log = options.log ?? (() => undefined);
  const worker = topicsWorkerHandler(options.workerEnv, { log });
  const getBootstrapBrokers: GetBootstrapBrokers = async (arn) => {
    const brokers = options.clusters?.[arn];
    if (brokers === undefined) throw new Error(`NotFoundException: cluster ${arn} not found`);
    return { BootstrapBrokerStringSaslIam: brokers, BootstrapBrokerString: brokers, BootstrapBrokerStringTls: brokers, BootstrapBrokerStringSaslScram: brokers };
  };
  const deps: TopicsProviderDeps = {
    getBootstrapBrokers,
    invokeWorker: async (_name, request, signal): Promise<TopicsWorkResult> => {
      const carried = JSON.parse(JSON.stringify(request)) as TopicsWorkRequest;
      options.requests?.push(carried);
      const answer = await Promise.race([
        worker(carried, { getRemainingTimeInMillis: () => carried.budgetMs + 1_000, logStreamName: '2026/12/06/[$LATEST]worker' }),
        new Promise<never>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true })),
      ]);
      return JSON.parse(JSON.stringify(answer)) as TopicsWorkResult;
    },
    stackStatus: async () => options.stackStatus ?? 'UPDATE_IN_PROGRESS',
    log,
  };
  return topicsProviderHandler({ KAFKA_LANES_TOPICS_WORKER: 'shop-dev-orders-topicsvpc' }, deps);
}
