import type { OfflineServerless } from '../../../src/serverless/offline/mapping';
import { quietCommitters } from '../../../src/serverless/offline/trigger';

function service(options: Record<string, unknown>, functions: Record<string, { environment?: Record<string, unknown> }>): OfflineServerless {
  return {
    service: { provider: {}, getAllFunctions: () => Object.keys(functions), getFunction: (key) => functions[key]! },
    processedInput: { options },
  };
}

describe('quietCommitters', () => {
  it('turns off the committers’ metric lines and info logs, keeping what the function sets and leaving handlers alone', () => {
    // Prepare
    const functions = {
      orders: { environment: { A: '1' } },
      ordersCommitter: { environment: { KAFKA_LANES_GROUP: 'orders-svc', POWERTOOLS_LOG_LEVEL: 'DEBUG' } },
    };

    // Act
    quietCommitters(service({}, functions), ['ordersCommitter']);

    // Assess
    expect(functions.ordersCommitter.environment).toEqual({ KAFKA_LANES_GROUP: 'orders-svc', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'DEBUG' });
    expect(functions.orders.environment).toEqual({ A: '1' });
  });

  it('changes nothing under `serverless offline start --verbose`', () => {
    const functions = { ordersCommitter: { environment: { KAFKA_LANES_GROUP: 'orders-svc' } } };

    quietCommitters(service({ verbose: true }, functions), ['ordersCommitter']);

    expect(functions.ordersCommitter.environment).toEqual({ KAFKA_LANES_GROUP: 'orders-svc' });
  });
});
