import { brokersOfProperties } from '../../../src/serverless/topics-provider';
import { produceRequest } from '../../../src/serverless/produce-handler';

const ARN = 'arn:aws:kafka:eu-west-1:123456789012:cluster/shop/abcd-1';

describe('brokersOfProperties', () => {
  const answer = { BootstrapBrokerStringSaslIam: 'b-1.shop:9098,b-2.shop:9098', BootstrapBrokerStringSaslScram: 'b-1.shop:9096', BootstrapBrokerStringTls: 'b-1.shop:9094' };

  it.each([
    ['iam', ['b-1.shop:9098', 'b-2.shop:9098']],
    ['scram', ['b-1.shop:9096']],
    ['tls', ['b-1.shop:9094']],
  ])("asks MSK for the cluster's %s listener, in the cluster's region", async (listener, expected) => {
    // Prepare
    const asked: Array<[string, string]> = [];

    // Act
    const brokers = await brokersOfProperties({ Cluster: ARN, Listener: listener }, async (arn, region) => {
      asked.push([arn, region]);
      return answer;
    });

    // Assess
    expect(brokers).toEqual(expected);
    expect(asked).toEqual([[ARN, 'eu-west-1']]);
  });

  it('takes configured brokers as given, without asking MSK', async () => {
    const brokers = await brokersOfProperties({ Brokers: 'b-1.kafka.internal:9094, b-2.kafka.internal:9094', Cluster: ARN }, async () => {
      throw new Error('MSK asked');
    });
    expect(brokers).toEqual(['b-1.kafka.internal:9094', 'b-2.kafka.internal:9094']);
  });

  it('refuses properties with neither, a listener MSK has not, or one the cluster does not offer, naming them', async () => {
    const get = async () => answer;
    await expect(brokersOfProperties({ Group: 'g' }, get)).rejects.toThrow("Expected the topics resource's `Brokers` or `Cluster` (an MSK cluster ARN), got {}");
    await expect(brokersOfProperties({ Cluster: ARN, Listener: 'sasl' }, get)).rejects.toThrow("Expected the topics resource's `Listener` to be one of iam, scram, tls, plaintext, got \"sasl\"");
    await expect(brokersOfProperties({ Cluster: ARN, Listener: 'plaintext' }, get)).rejects.toThrow(`Expected MSK cluster ${ARN} to offer plaintext client access (BootstrapBrokerString), it offers IAM, SCRAM, TLS`);
  });
});

describe('produceRequest', () => {
  it('accepts records with a value, an optional key and headers, and an optional wait', () => {
    const request = { records: [{ key: 'c-1', value: { orderId: 'o-1' }, headers: { trace: 't' } }, { value: 'text' }], waitSeconds: 0 };
    expect(produceRequest(request)).toBe(request);
  });

  it.each([
    [{}, 'Expected `{"records": [{"key": "...", "value": ...}]}` with at least one record, got {}'],
    [{ records: [{ key: 'c-1' }] }, 'Expected records[0].value (JSON, or a string written as it is), got none'],
    [{ records: [{ key: 7, value: 1 }] }, 'Expected records[0].key to be a string, got 7'],
    [{ records: [{ value: 1 }], waitSeconds: -1 }, 'Expected `waitSeconds` to be a number of seconds, 0 or more, got -1'],
  ])('refuses %j, saying what was expected', (input, message) => {
    expect(() => produceRequest(input)).toThrow(message);
  });
});
