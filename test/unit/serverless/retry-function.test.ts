import { validateBlock, functionBlockSchema } from '../../../src/serverless/config';
import { planFunction } from '../../../src/serverless/plan';
import type { FunctionView } from '../../../src/serverless/types';
import { retryDefinition } from '../../../src/serverless/retry-function';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';
const service = { service: 'shop', stage: 'prod' };

function orders(extra: Partial<FunctionView> = {}): FunctionView {
  return { handler: 'src/orders.handler', timeout: 120, events: [{ msk: { arn: ARN, topic: 'orders' } }], ...extra };
}

describe('the retry function', () => {
  it('is the handler as a durable function: its code, settings and environment, the retry tiers\' triggers, a DurableConfig of at most 15 minutes', () => {
    // Prepare
    const handler = orders({
      memorySize: 1024,
      vpc: { subnetIds: ['subnet-a'], securityGroupIds: ['sg-a'] },
      layers: ['arn:aws:lambda:eu-west-1:123456789012:layer:x:1'],
      environment: { KAFKA_LANES_GROUP: 'orders-svc', PAYMENTS_URL: 'https://pay.shop.io' },
      kafkaLanes: { group: 'orders-svc' },
      provisionedConcurrency: 2,
      reservedConcurrency: 10,
      maximumRetryAttempts: 0,
    });
    const { plan, problems } = planFunction(service, 'orders', handler, { group: 'orders-svc', retryTiers: ['5s', '1m'] });

    // Act
    const retry = retryDefinition(handler, plan!);

    // Assess
    expect(problems).toEqual([]);
    expect(plan?.retry.key).toBe('ordersRetry');
    expect(retry).toEqual({
      handler: 'src/orders.handler',
      timeout: 120,
      memorySize: 1024,
      vpc: { subnetIds: ['subnet-a'], securityGroupIds: ['sg-a'] },
      layers: ['arn:aws:lambda:eu-west-1:123456789012:layer:x:1'],
      name: 'shop-prod-orders-retry',
      description: "kafka-lanes retry function of group orders-svc: runs the retry tiers' copies, each waiting suspended until it is due",
      events: plan!.retryTriggers,
      durableConfig: { executionTimeout: 900, retentionPeriodInDays: 7 },
      // The handler reads how long one execution may wait (KAFKA_LANES_RETRY_EXECUTION_TIMEOUT).
      environment: { KAFKA_LANES_GROUP: 'orders-svc', PAYMENTS_URL: 'https://pay.shop.io', KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '900' },
    });
    // The handler's own definition is not touched.
    expect(handler.events).toEqual([{ msk: { arn: ARN, topic: 'orders' } }]);
  });

  it("takes the block's execution timeout and retention", () => {
    // Act
    const { plan } = planFunction(service, 'orders', orders(), { group: 'orders-svc', retry: { executionTimeout: 600, retentionPeriodInDays: 1 } });

    // Assess
    expect(plan?.retry.durableConfig).toEqual({ executionTimeout: 600, retentionPeriodInDays: 1 });
    expect(retryDefinition(orders(), plan!).environment).toEqual({ KAFKA_LANES_RETRY_EXECUTION_TIMEOUT: '600' });
  });

  it.each([
    [{ executionTimeout: 901 }, 'functions.orders.kafkaLanes.retry.executionTimeout: at most 900 seconds (an event source mapping waits for a durable execution 15 minutes at most), got 901'],
    [{ retentionPeriodInDays: 91 }, 'functions.orders.kafkaLanes.retry.retentionPeriodInDays'],
    [{ executionTimeout: 60.5 }, 'functions.orders.kafkaLanes.retry.executionTimeout'],
  ])('refuses the block %j, naming the setting', (retry, message) => {
    // Act
    const { problems } = validateBlock(functionBlockSchema, { retry }, 'functions.orders.kafkaLanes');

    // Assess
    expect(problems).toEqual([expect.stringContaining(message)]);
  });

  it('refuses what Lambda would: a runtime durable functions do not run, an execution shorter than one invocation, a name over 64 characters', () => {
    // Act
    const runtime = planFunction({ ...service, providerRuntime: 'nodejs20.x' }, 'orders', orders(), { group: 'g' });
    const own = planFunction(service, 'orders', orders({ runtime: 'python3.12' }), { group: 'g' });
    const short = planFunction(service, 'orders', orders(), { group: 'g', retry: { executionTimeout: 60 } });
    const long = planFunction(service, 'orders', orders({ name: 'n'.repeat(60) }), { group: 'g', committer: { enabled: false } });

    // Assess
    expect(runtime.problems).toEqual([
      'provider.runtime (the runtime of the retry function kafka-lanes adds, a Lambda durable function): expected one of nodejs22.x, nodejs24.x, got nodejs20.x',
    ]);
    expect(own.problems).toEqual([expect.stringMatching(/^functions\.orders\.runtime \(the runtime of the retry function .*got python3\.12$/)]);
    expect(short.problems).toEqual([
      "functions.orders.kafkaLanes.retry.executionTimeout: expected at least the function's timeout, 120 seconds (one invocation of the retry function runs inside its durable execution), got 60",
    ]);
    expect(long.problems).toEqual(expect.arrayContaining([expect.stringMatching(/^functions\.ordersRetry\.name \(the retry function kafka-lanes adds, `<function name>-retry`\): expected at most 64 characters/)]));
  });

  it('takes a container image whatever its runtime, and the framework default runtime when none is named', () => {
    expect(planFunction(service, 'orders', orders({ image: 'shop/orders:1' }), { group: 'g' }).problems).toEqual([]);
    expect(planFunction(service, 'orders', orders(), { group: 'g' }).problems).toEqual([]);
  });
});
