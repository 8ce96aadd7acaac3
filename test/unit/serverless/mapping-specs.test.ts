import { customBlockSchema, validateBlock } from '../../../src/serverless/config';
import { mappingSpecs, type OfflineServerless } from '../../../src/serverless/offline/mapping';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';

function serverless(functions: Record<string, Array<Record<string, unknown>>>, durableConfig: Record<string, unknown> = {}): OfflineServerless {
  return {
    service: {
      provider: {},
      getAllFunctions: () => Object.keys(functions),
      getFunction: (key: string) => ({ events: functions[key], ...(durableConfig[key] === undefined ? {} : { durableConfig: durableConfig[key] }) }),
    },
  };
}

describe('mappingSpecs (one emulated event source mapping per Kafka trigger)', () => {
  it('maps an MSK cluster ARN to the local broker the configuration names, with Lambda defaults', () => {
    // Act
    const specs = mappingSpecs(serverless({ orders: [{ msk: { arn: ARN, topic: 'orders', consumerGroupId: 'g' } }, { schedule: 'rate(1 minute)' }] }), {
      offline: { brokers: { [ARN]: 'localhost:19092', default: '127.0.0.1:9092' } },
    });

    // Assess
    expect(specs).toEqual([
      {
        functionKey: 'orders',
        topic: 'orders',
        groupId: 'g',
        batchSize: 100,
        batchingWindowMs: 500,
        startingPosition: 'TRIM_HORIZON',
        startingPositionTimestamp: undefined,
        reportBatchItemFailures: false,
        brokers: ['localhost:19092'],
        eventSource: { source: 'aws:kafka', eventSourceArn: ARN },
        mixPartitions: true,
        sessionTimeoutMs: 30_000,
      },
    ]);
  });

  it('refuses filter patterns, naming the trigger, rather than deliver what AWS would filter out', () => {
    // Act
    const act = (): unknown => mappingSpecs(serverless({ orders: [{ msk: { arn: ARN, topic: 'orders', filterPatterns: [{ value: { a: [1] } }] } }] }), {});

    // Assess
    expect(act).toThrow('functions.orders.events.msk.filterPatterns: expected none under `serverless offline` (the offline trigger does not apply event filters)');
  });

  it('reads a self-managed trigger from the default broker, reports failures in provisioned mode, one partition per event when told, skips disabled triggers', () => {
    // Act
    const specs = mappingSpecs(
      serverless({
        a: [{ kafka: { topic: 't', bootstrapServers: ['kafka.internal:9092'], batchSize: 5, maximumBatchingWindow: 0, provisionedPollerConfig: { minimumPollers: 1 } } }],
        b: [{ msk: { arn: ARN, topic: 'off', enabled: false } }],
      }),
      { offline: { mixPartitions: false } },
    );

    // Assess
    expect(specs).toMatchObject([
      {
        functionKey: 'a',
        topic: 't',
        batchSize: 5,
        batchingWindowMs: 0,
        reportBatchItemFailures: true,
        brokers: ['127.0.0.1:9092'],
        eventSource: { source: 'SelfManagedKafka' },
        mixPartitions: false,
      },
    ]);
  });
});

describe('a durable function under the offline trigger', () => {
  it("plays each trigger of a function with `durableConfig` as a durable function, lasting its execution timeout", () => {
    const specs = mappingSpecs(serverless(
      { orders: [{ kafka: { topic: 'orders', bootstrapServers: ['k:9092'] } }], ordersRetry: [{ kafka: { topic: 'g.retry.5s', bootstrapServers: ['k:9092'] } }] },
      { ordersRetry: { executionTimeout: 900, retentionPeriodInDays: 1 } },
    ), {});
    expect(specs.map((spec) => [spec.functionKey, spec.durable])).toEqual([['orders', undefined], ['ordersRetry', { executionTimeoutMs: 900_000 }]]);
  });

  it.each([[{}], [{ executionTimeout: '15m' }], [{ executionTimeout: 0 }]])('refuses %j, naming the setting', (durableConfig) => {
    const act = (): unknown => mappingSpecs(serverless({ r: [{ kafka: { topic: 't', bootstrapServers: ['k:9092'] } }] }, { r: durableConfig }), {});
    expect(act).toThrow(/^kafka-lanes offline: functions\.r\.durableConfig\.executionTimeout: expected a whole number of seconds, at least 1, got /);
  });
});

describe('custom.kafkaLanes.offline.mixPartitions', () => {
  it('takes a boolean and names anything else', () => {
    // Act
    const off = validateBlock(customBlockSchema, { offline: { mixPartitions: false } }, 'custom.kafkaLanes');
    const wrong = validateBlock(customBlockSchema, { offline: { mixPartitions: 'no' } }, 'custom.kafkaLanes');

    // Assess
    expect(off).toEqual({ value: { offline: { mixPartitions: false } }, problems: [] });
    expect(wrong.problems).toHaveLength(1);
    expect(wrong.problems[0]).toMatch(/^custom\.kafkaLanes\.offline\.mixPartitions: .*boolean.*, got "no"$/);
  });
});
