import { alarmsBlockSchema, planAlarms, type AlarmsInput } from '../../../src/serverless/alarms';

const input: AlarmsInput = {
  service: 'shop', stage: 'prod', functionKey: 'order-events', group: 'orders-svc', functionName: 'shop-prod-order-events',
  retryFunctionName: 'shop-prod-order-events-retry', committerName: 'shop-prod-order-events-committer', block: undefined,
};

describe('planAlarms', () => {
  it('plans five alarms, an SNS topic and a dashboard by default', () => {
    // Act
    const resources = planAlarms(input);

    // Assess
    expect(Object.keys(resources)).toEqual([
      'KafkaLanesOrderEventsDeadLettersAlarm', 'KafkaLanesOrderEventsRefusedByBrokerAlarm', 'KafkaLanesOrderEventsOldestBlockedLaneAlarm',
      'KafkaLanesOrderEventsCommittedLagAlarm', 'KafkaLanesOrderEventsCommitterErrorsAlarm', 'KafkaLanesAlarmKey', 'KafkaLanesAlarmTopic', 'KafkaLanesOrderEventsDashboard',
    ]);
    expect(resources['KafkaLanesOrderEventsDeadLettersAlarm']?.Properties).toEqual({
      AlarmName: 'shop-prod-orders-svc-dead-letters',
      AlarmDescription: 'kafka-lanes group orders-svc: more than 0 record(s) dead-lettered in 5m',
      ComparisonOperator: 'GreaterThanThreshold',
      AlarmActions: [{ Ref: 'KafkaLanesAlarmTopic' }],
      OKActions: [{ Ref: 'KafkaLanesAlarmTopic' }],
      Namespace: 'KafkaLanes',
      MetricName: 'RecordsDeadLettered',
      Dimensions: [{ Name: 'service', Value: 'kafka-lanes' }, { Name: 'group', Value: 'orders-svc' }],
      Threshold: 0,
      Statistic: 'Sum',
      Period: 300,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
  });

  it('leaves out what reads the committer when the committer is off', () => {
    const resources = planAlarms({ ...input, committerName: undefined, block: { dashboard: false } });
    expect(Object.keys(resources)).toEqual(['KafkaLanesOrderEventsDeadLettersAlarm', 'KafkaLanesOrderEventsRefusedByBrokerAlarm', 'KafkaLanesAlarmKey', 'KafkaLanesAlarmTopic']);
  });

  it('encrypts the topic with a key CloudWatch may use, and subscribes the e-mail addresses given', () => {
    // Act
    const resources = planAlarms({ ...input, block: { email: ['ops@shop.io', 'oncall@shop.io'] } });

    // Assess
    expect(resources['KafkaLanesAlarmTopic']?.Properties).toEqual({
      DisplayName: 'kafka-lanes alarms of shop',
      KmsMasterKeyId: { Ref: 'KafkaLanesAlarmKey' },
      Subscription: [
        { Protocol: 'email', Endpoint: 'ops@shop.io' },
        { Protocol: 'email', Endpoint: 'oncall@shop.io' },
      ],
    });
    const policy = resources['KafkaLanesAlarmKey']?.Properties['KeyPolicy'] as { Statement: Array<{ Principal: unknown; Action: unknown }> };
    // The statement SNS's key management guide gives for an AWS service's events: no condition that CloudWatch might not
    // meet, which would drop every notification (who may publish is the topic's default policy's to say).
    expect(policy.Statement).toContainEqual({ Sid: 'CloudWatchAlarms', Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'], Resource: '*' });
    expect(resources['KafkaLanesAlarmTopic']?.Properties['TopicPolicy']).toBeUndefined();
    expect(planAlarms({ ...input, block: { email: 'ops@shop.io' } })['KafkaLanesAlarmTopic']?.Properties['Subscription']).toEqual([{ Protocol: 'email', Endpoint: 'ops@shop.io' }]);
  });

  it('plans nothing when turned off', () => {
    expect(planAlarms({ ...input, block: { enabled: false } })).toEqual({});
  });

  it('points the dashboard at its alarms, the stack region and the functions that run the group: retry function and committer', () => {
    const body = (planAlarms(input)['KafkaLanesOrderEventsDashboard']?.Properties['DashboardBody'] as { 'Fn::Sub': string })['Fn::Sub'];
    const functions = [...body.matchAll(/"FunctionName","([^"]+)"/g)].map((match) => match[1]);
    expect([...new Set(functions)]).toEqual(['shop-prod-order-events-retry', 'shop-prod-order-events-committer']);
    expect(body).toContain('"${KafkaLanesOrderEventsOldestBlockedLaneAlarm.Arn}"');
    expect(body).toContain('"region":"${AWS::Region}"');
    // Fn::Sub replaces every ${...}: nothing else may look like one.
    expect(body.match(/\$\{[^}]*\}/g)?.every((ref) => /^\$\{(AWS::Region|KafkaLanes\w+Alarm\.Arn)\}$/.test(ref))).toBe(true);
  });
});

describe('the alarms block', () => {
  it.each([
    [{ period: '90s' }, 'a whole number of minutes'],
    [{ period: '25h' }, 'a whole number of minutes'],
    [{ oldestBlockedLane: '500ms' }, 'at least `1s`'],
    [{ notify: 'ops-pager' }, 'an SNS topic ARN'],
    [{ email: 'ops-pager' }, 'an e-mail address'],
    [{ email: 'ops@shop.io', notify: 'arn:aws:sns:eu-west-1:123456789012:ops' }, 'expected `email` only with the topic the stack creates'],
    [{ deadLetters: -1 }, ''],
  ])('refuses %j', (block, message) => {
    const parsed = alarmsBlockSchema.safeParse(block);
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain(message);
  });

  it('refuses an unknown key', () => {
    expect(alarmsBlockSchema.safeParse({ oldestLane: '5m' }).success).toBe(false);
  });
});
