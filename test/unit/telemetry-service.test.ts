import { Logger } from '@aws-lambda-powertools/logger';
import { createTelemetry, logServiceName } from '../../src/telemetry';

describe("the logs' service", () => {
  it("is the user's service as Powertools names it, else kafka-lanes", () => {
    expect(logServiceName({ POWERTOOLS_SERVICE_NAME: 'shop' })).toBe('shop');
    expect(logServiceName({ POWERTOOLS_SERVICE_NAME: ' ' })).toBe('kafka-lanes');
    expect(logServiceName({})).toBe('kafka-lanes');
  });

  it("is ctx.logger's, while the metrics keep the service dimension the alarms select", () => {
    const saved = process.env.POWERTOOLS_SERVICE_NAME;
    process.env.POWERTOOLS_SERVICE_NAME = 'shop';
    try {
      const { logger, metrics } = createTelemetry('orders-svc');
      expect(logger).toBeInstanceOf(Logger);
      expect((logger as unknown as { powertoolsLogData: { serviceName: string } }).powertoolsLogData.serviceName).toBe('shop');
      metrics.addMetric('RecordsDone', 'Count', 1);
      expect(metrics.serializeMetrics()).toMatchObject({ service: 'kafka-lanes', group: 'orders-svc' });
    } finally {
      if (saved === undefined) delete process.env.POWERTOOLS_SERVICE_NAME;
      else process.env.POWERTOOLS_SERVICE_NAME = saved;
    }
  });
});
