import { responseBody, RESPONSE_MAX_BYTES, sendResponse, type CustomResourceEvent } from '../../../src/serverless/custom-resource';
import { ensureRequest, failureReason } from '../../../src/serverless/topics-handler';

const event: CustomResourceEvent = {
  RequestType: 'Create',
  ResponseURL: 'https://cloudformation-custom-resource-response-euwest1.s3.eu-west-1.amazonaws.com/x?X-Amz-Signature=abc',
  StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/shop-dev/5b6e2f00',
  RequestId: 'r-1',
  ResourceType: 'Custom::KafkaLanesTopics',
  LogicalResourceId: 'OrdersKafkaLanesTopics',
  ResourceProperties: {},
};

describe('responseBody', () => {
  it('carries the fields AWS requires, copied from the request', () => {
    expect(JSON.parse(responseBody(event, { status: 'SUCCESS', physicalResourceId: 'kafka-lanes-topics:orders', data: { BootstrapBrokers: 'b-1:9098' } }))).toEqual({
      Status: 'SUCCESS',
      PhysicalResourceId: 'kafka-lanes-topics:orders',
      StackId: event.StackId,
      RequestId: 'r-1',
      LogicalResourceId: 'OrdersKafkaLanesTopics',
      Data: { BootstrapBrokers: 'b-1:9098' },
    });
  });

  it('cuts a reason so that the body stays within 4,096 bytes, even with characters JSON escapes or UTF-8 widens', () => {
    for (const unit of ['x', '"', 'é', '\n', '€']) {
      const body = responseBody(event, { status: 'FAILED', physicalResourceId: 'p', reason: `topic \`a\`: ${unit.repeat(6_000)}` });
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(RESPONSE_MAX_BYTES);
      expect(JSON.parse(body).Reason).toMatch(/^topic `a`: .+ \[\.\.\.\]$/s);
    }
  });

  it('fails, saying why, when the data alone would not fit', () => {
    const body = JSON.parse(responseBody(event, { status: 'SUCCESS', physicalResourceId: 'p', data: { BootstrapBrokers: 'b'.repeat(5_000) } }));
    expect(body).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('over CloudFormation') });
    expect(body.Data).toBeUndefined();
  });

  it('refuses an empty physical ID or one over 1 KB', () => {
    expect(() => responseBody(event, { status: 'SUCCESS', physicalResourceId: '' })).toThrow(RangeError);
    expect(() => responseBody(event, { status: 'SUCCESS', physicalResourceId: 'x'.repeat(1025) })).toThrow(RangeError);
  });
});

describe('sendResponse', () => {
  it('sends over HTTPS only, or plain HTTP to a loopback address', async () => {
    await expect(sendResponse('http://example.com/x', '{}')).rejects.toThrow('Expected an https:// ResponseURL');
    await expect(sendResponse('ftp://127.0.0.1/x', '{}')).rejects.toThrow('Expected an https:// ResponseURL');
  });
});

describe('ensureRequest', () => {
  it('reads the properties as CloudFormation passes them (scalars as strings)', () => {
    expect(ensureRequest({ Group: 'g', Tiers: ['5s', '1m'], Source: 'orders', SourcePartitions: '6', Outputs: ['shipments'], RetentionMs: '86400000', ReplicationFactor: '3' })).toEqual({
      group: 'g',
      topics: [{ topic: 'orders', partitions: 6 }],
      tiers: ['5s', '1m'],
      outputs: [{ topic: 'shipments' }],
      retentionMs: 86_400_000,
      replicationFactor: 3,
    });
    expect(ensureRequest({ Group: 'g', Tiers: ['5s'], Source: 'orders' }).topics).toEqual([{ topic: 'orders' }]);
  });

  it('names the property, what was expected and what was given', () => {
    expect(() => ensureRequest({ Group: 'g', Tiers: ['5s'], Source: 'orders', SourcePartitions: 'six' })).toThrow('Expected `SourcePartitions` to be a positive integer, got "six"');
    expect(() => ensureRequest({ Tiers: ['5s'], Source: 'orders' })).toThrow("Expected `Group` to be the group's name, got undefined");
    expect(() => ensureRequest({ Group: 'g', Tiers: '5s', Source: 'orders' })).toThrow('Expected `Tiers` to be a list of names, got "5s"');
  });
});

describe('failureReason', () => {
  it("names each topic kafkajs reports refused, with Kafka's error name", () => {
    const refused = Object.assign(new Error('Topic creation errors'), {
      errors: [Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), { topic: 'g.dlq', type: 'TOPIC_AUTHORIZATION_FAILED', code: 29 })],
    });
    expect(failureReason(refused)).toBe('topic `g.dlq`: TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed]');
    expect(failureReason(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'))).toBe('Connection error: connect ECONNREFUSED 127.0.0.1:1');
  });
});
