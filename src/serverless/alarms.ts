import { z } from 'zod';
import { durationMs } from '../options/duration';
import { METRIC } from '../telemetry';

/**
 * CloudWatch alarms and a dashboard per group, on the metrics the functions publish (namespace `KafkaLanes`,
 * dimensions `service` = `kafka-lanes` and `group`; see `src/telemetry.ts`) and on Lambda's own `Errors` of
 * the committer. On by default; `alarms: { enabled: false }` in a function's `kafkaLanes` block turns them off.
 *
 * | alarm | metric | fires when |
 * |---|---|---|
 * | oldest blocked lane | `OldestBlockedLaneAge` (committer, each run), Maximum | a lane has been blocked longer than `oldestBlockedLane` |
 * | dead letters | `RecordsDeadLettered`, Sum per `period` | more than `deadLetters` records were dead-lettered |
 * | committed lag | `CommittedLag` (committer), Maximum | `<group>.lanes` is more than `committedLag` records behind, 3 periods running |
 * | refused by the broker | `RecordsRefusedByBroker`, Sum per `period` | the broker refused more than `refusedByBroker` hand-off copies |
 * | committer failures | `AWS/Lambda` `Errors` of the committer, Sum per `period` | more than `committerErrors` runs failed |
 */

const NAMESPACE = 'KafkaLanes';
const SERVICE_DIMENSION = 'kafka-lanes';

const minutes = z
  .string()
  .regex(/^[1-9][0-9]*(m|h)$/, { error: 'a whole number of minutes from `1m` to `24h` (CloudWatch periods are multiples of 60 s)' })
  .refine((text) => {
    const ms = durationMs(text);
    return ms !== undefined && ms >= 60_000 && ms <= 86_400_000 && ms % 60_000 === 0;
  }, { error: 'a whole number of minutes from `1m` to `24h` (CloudWatch periods are multiples of 60 s)' });
const age = z.string().regex(/^[1-9][0-9]*(ms|s|m|h)$/, { error: 'a duration like `15m`' }).refine((text) => (durationMs(text) ?? 0) >= 1_000, { error: 'a duration of at least `1s`, like `15m`' });
const count = z.number().int().min(0);

/** The `alarms:` entry of a function's `kafkaLanes` block. */
export const alarmsBlockSchema = z
  .strictObject({
  /** `false` turns the group's alarms and dashboard off. */
  enabled: z.boolean().optional(),
  /** An existing SNS topic to notify; default: a topic created for the service. */
  notify: z.string().regex(/^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_.-]+$/, { error: 'an SNS topic ARN' }).optional(),
  /**
   * E-mail addresses subscribed to the topic the stack creates (each confirms the subscription from the mail SNS
   * sends); without one, or a `notify` topic, the alarms notify no one.
   */
  email: z.union([z.email({ error: 'an e-mail address' }), z.array(z.email({ error: 'an e-mail address' })).min(1).max(10)]).optional(),
  /** Period of the counting alarms (default `5m`). */
  period: minutes.optional(),
  /** Alarm when a lane is blocked longer than this (default `15m`). */
  oldestBlockedLane: age.optional(),
  /** Alarm when more than this many records are dead-lettered in one period (default 0: any). */
  deadLetters: count.optional(),
  /** Alarm when `<group>.lanes` is more than this many records behind for 3 periods (default 100000). */
  committedLag: count.optional(),
  /** Alarm when the broker refuses more than this many hand-off copies in one period (default 0: any). */
  refusedByBroker: count.optional(),
  /** Alarm when more than this many committer runs fail in one period (default 0: any). */
  committerErrors: count.optional(),
  /** A CloudWatch dashboard of the group (default `true`). */
  dashboard: z.boolean().optional(),
  })
  .refine((block) => block.email === undefined || block.notify === undefined, {
    error: 'expected `email` only with the topic the stack creates, not beside `notify` (subscribe to your own topic where it is managed)',
    path: ['email'],
  });
export type AlarmsBlock = z.infer<typeof alarmsBlockSchema>;

export const ALARM_DEFAULTS = {
  period: '5m',
  oldestBlockedLane: '15m',
  deadLetters: 0,
  committedLag: 100_000,
  refusedByBroker: 0,
  committerErrors: 0,
} as const;

export interface AlarmsInput {
  readonly service: string;
  readonly stage: string;
  readonly functionKey: string;
  readonly group: string;
  /** The deployed names of the handler, of its retry function and of its committer (`undefined` when the committer is off). */
  readonly functionName: string;
  readonly retryFunctionName: string;
  readonly committerName: string | undefined;
  readonly block: AlarmsBlock | undefined;
}

export interface CfnResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
}

/** The name of the SNS topic resource the alarms notify when no `notify` topic is given (one per service). */
export const ALARM_TOPIC_ID = 'KafkaLanesAlarmTopic';
/** The KMS key that encrypts that topic. */
export const ALARM_KEY_ID = 'KafkaLanesAlarmKey';

/**
 * The alarm topic, encrypted at rest with a key of its own: CloudWatch publishes to an encrypted topic only when the
 * key's policy lets its service principal use the key, which the AWS managed key `alias/aws/sns` does not (its
 * policy cannot be changed). The account keeps the key's administration (IAM policies decide who else may use it).
 *
 * CloudWatch's statement is the one the SNS developer guide gives ("Key management", "Enable compatibility between event
 * sources from AWS services and encrypted topics"): the service principal, `kms:Decrypt` and `kms:GenerateDataKey*`,
 * no condition. A confused-deputy condition (`aws:SourceAccount`) would rest on no first-party page saying that
 * CloudWatch sends the key with its KMS requests, and if it did not, every notification would be refused with the error
 * only in the alarms' history: fail-safe is to leave it out. Who may publish is the topic's to say: it keeps SNS's
 * default access policy, which lets only the topic owner's account publish (SNS developer guide, "Amazon SNS access
 * control", the default policy's `AWS:SourceOwner` condition), so another account's alarm cannot use the key through it.
 */
function alarmTopicResources(service: string, emails: readonly string[]): Record<string, CfnResource> {
  return {
    [ALARM_KEY_ID]: {
      Type: 'AWS::KMS::Key',
      Properties: {
        Description: `kafka-lanes alarm topic of ${service}`,
        EnableKeyRotation: true,
        KeyPolicy: {
          Version: '2012-10-17',
          Statement: [
            { Sid: 'Account', Effect: 'Allow', Principal: { AWS: { 'Fn::Sub': 'arn:${AWS::Partition}:iam::${AWS::AccountId}:root' } }, Action: 'kms:*', Resource: '*' },
            { Sid: 'CloudWatchAlarms', Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Action: ['kms:Decrypt', 'kms:GenerateDataKey*'], Resource: '*' },
          ],
        },
      },
    },
    [ALARM_TOPIC_ID]: {
      Type: 'AWS::SNS::Topic',
      Properties: {
        DisplayName: `kafka-lanes alarms of ${service}`,
        KmsMasterKeyId: { Ref: ALARM_KEY_ID },
        ...(emails.length === 0 ? {} : { Subscription: emails.map((address) => ({ Protocol: 'email', Endpoint: address })) }),
      },
    },
  };
}

function logicalPart(text: string): string {
  const part = text.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase());
  return part.charAt(0).toUpperCase() + part.slice(1);
}

/**
 * The CloudFormation resources of one group's alarms and dashboard, by logical id; `{}` when turned off. Pure.
 *
 * @example
 * planAlarms({ service: 'shop', stage: 'prod', functionKey: 'orders', group: 'orders-svc', functionName: 'shop-prod-orders',
 *   committerName: 'shop-prod-orders-committer', block: { oldestBlockedLane: '30m' } });
 * // { KafkaLanesOrdersOldestBlockedLaneAlarm: { Type: 'AWS::CloudWatch::Alarm', ... }, ..., KafkaLanesAlarmTopic: ... }
 */
export function planAlarms(input: AlarmsInput): Record<string, CfnResource> {
  const { block } = input;
  if (block?.enabled === false) return {};
  const settings = { ...ALARM_DEFAULTS, ...block };
  const periodS = (durationMs(settings.period) ?? 300_000) / 1000;
  const prefix = `KafkaLanes${logicalPart(input.functionKey)}`;
  const actions = [settings.notify ?? { Ref: ALARM_TOPIC_ID }];
  const context: AlarmContext = {
    input,
    settings,
    periodS,
    dimensions: [{ Name: 'service', Value: SERVICE_DIMENSION }, { Name: 'group', Value: input.group }],
    counter: { Statistic: 'Sum', Period: periodS, EvaluationPeriods: 1, TreatMissingData: 'notBreaching' },
  };
  const resources: Record<string, CfnResource> = {};
  for (const rule of ALARMS.filter((alarm) => !alarm.ofCommitter || input.committerName !== undefined)) {
    const { description, properties } = rule.alarm(context);
    resources[`${prefix}${rule.id}Alarm`] = {
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        AlarmName: `${input.service}-${input.stage}-${input.group}-${rule.what}`.slice(0, 255),
        AlarmDescription: `kafka-lanes group ${input.group}: ${description}`,
        ComparisonOperator: 'GreaterThanThreshold',
        AlarmActions: actions,
        OKActions: actions,
        ...properties,
      },
    };
  }
  if (settings.notify === undefined) {
    const emails = settings.email === undefined ? [] : Array.isArray(settings.email) ? settings.email : [settings.email];
    Object.assign(resources, alarmTopicResources(input.service, emails));
  }
  if (settings.dashboard !== false) {
    const alarmIds = Object.keys(resources).filter((id) => id.endsWith('Alarm'));
    resources[`${prefix}Dashboard`] = {
      Type: 'AWS::CloudWatch::Dashboard',
      Properties: {
        DashboardName: `${input.service}-${input.stage}-${input.group}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 255),
        DashboardBody: { 'Fn::Sub': JSON.stringify(dashboardBody(input, alarmIds)) },
      },
    };
  }
  return resources;
}

/** What a group's alarms are made of: its settings (defaults filled in), its period in seconds, its metrics' dimensions. */
interface AlarmContext {
  readonly input: AlarmsInput;
  readonly settings: AlarmsBlock & Required<Pick<AlarmsBlock, keyof typeof ALARM_DEFAULTS>>;
  readonly periodS: number;
  readonly dimensions: ReadonlyArray<{ Name: string; Value: string }>;
  /** A counting alarm's statistic: the sum over one period, no data being no event. */
  readonly counter: Record<string, unknown>;
}

/**
 * A group's alarms (the table at the top of this file), in order: each its logical ID's part, its name's, whether it
 * reads the committer's figures (none when the committer is off), and its description and metric.
 */
const ALARMS: ReadonlyArray<{ id: string; what: string; ofCommitter: boolean; alarm: (c: AlarmContext) => { description: string; properties: Record<string, unknown> } }> = [
  {
    id: 'DeadLetters', what: 'dead-letters', ofCommitter: false,
    alarm: ({ settings, dimensions, counter }) => ({
      description: `more than ${settings.deadLetters} record(s) dead-lettered in ${settings.period}`,
      properties: { Namespace: NAMESPACE, MetricName: METRIC.deadLettered, Dimensions: dimensions, Threshold: settings.deadLetters, ...counter },
    }),
  },
  {
    id: 'RefusedByBroker', what: 'refused-by-broker', ofCommitter: false,
    alarm: ({ settings, dimensions, counter }) => ({
      description: `the broker refused more than ${settings.refusedByBroker} hand-off copies in ${settings.period}`,
      properties: { Namespace: NAMESPACE, MetricName: METRIC.refusedByBroker, Dimensions: dimensions, Threshold: settings.refusedByBroker, ...counter },
    }),
  },
  // Published by the committer once a run: a committer that stops running leaves them missing, and its own
  // errors alarm (below) says why.
  {
    id: 'OldestBlockedLane', what: 'oldest-blocked-lane', ofCommitter: true,
    alarm: ({ settings, dimensions }) => ({
      description: `a lane has been blocked for more than ${settings.oldestBlockedLane}`,
      properties: {
        Namespace: NAMESPACE, MetricName: METRIC.oldestBlockedLaneAge, Dimensions: dimensions, Statistic: 'Maximum', Period: 60,
        EvaluationPeriods: 1, Threshold: durationMs(settings.oldestBlockedLane), TreatMissingData: 'missing',
      },
    }),
  },
  {
    id: 'CommittedLag', what: 'committed-lag', ofCommitter: true,
    alarm: ({ input, settings, periodS, dimensions }) => ({
      description: `${input.group}.lanes more than ${settings.committedLag} records behind for 3 periods of ${settings.period}`,
      properties: {
        Namespace: NAMESPACE, MetricName: METRIC.committedLag, Dimensions: dimensions, Statistic: 'Maximum', Period: periodS,
        EvaluationPeriods: 3, Threshold: settings.committedLag, TreatMissingData: 'missing',
      },
    }),
  },
  {
    id: 'CommitterErrors', what: 'committer-errors', ofCommitter: true,
    alarm: ({ input, settings, counter }) => ({
      description: `more than ${settings.committerErrors} committer run(s) failed in ${settings.period}`,
      properties: {
        Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: input.committerName }],
        Threshold: settings.committerErrors, ...counter,
      },
    }),
  },
];

/** The dashboard's widgets: the figures of `kafka-lanes dashboard`, as CloudWatch metrics. `${...}` is for Fn::Sub. */
function dashboardBody(input: AlarmsInput, alarmIds: readonly string[]): Record<string, unknown> {
  const g = ['service', SERVICE_DIMENSION, 'group', input.group];
  const metric = (name: string, stat: string, label: string): unknown[] => [NAMESPACE, name, ...g, { stat, label }];
  const widget = (x: number, y: number, title: string, metrics: unknown[][]): Record<string, unknown> => ({
    type: 'metric', x, y, width: 12, height: 6,
    properties: { title, region: '${AWS::Region}', view: 'timeSeries', period: 60, metrics },
  });
  const widgets: Array<Record<string, unknown>> = [
    { type: 'alarm', x: 0, y: 0, width: 24, height: 3, properties: { title: `alarms of ${input.group}`, alarms: alarmIds.map((id) => `\${${id}.Arn}`) } },
    widget(0, 3, 'committed lag (records behind)', [metric(METRIC.committedLag, 'Maximum', 'committed lag')]),
    widget(12, 3, 'blocked lanes', [
      metric(METRIC.blockedLanes, 'Maximum', 'blocked'), metric(METRIC.heldLanes, 'Maximum', 'held'),
      [NAMESPACE, METRIC.oldestBlockedLaneAge, ...g, { stat: 'Maximum', label: 'oldest blocked lane age (ms)', yAxis: 'right' }],
    ]),
    widget(0, 9, 'records per minute', [
      metric(METRIC.done, 'Sum', 'done'), metric(METRIC.retried, 'Sum', 'retried'), metric(METRIC.parked, 'Sum', 'parked'),
      metric(METRIC.deadLettered, 'Sum', 'dead-lettered'),
    ]),
    widget(12, 9, 'dead letters and refusals per minute', [
      metric(METRIC.deadLettered, 'Sum', 'dead-lettered'), metric(METRIC.refusedByBroker, 'Sum', 'refused by the broker'),
      metric(METRIC.refused, 'Sum', 'refused (back-pressure)'), metric(METRIC.notHandedOff, 'Sum', 'not handed off'),
    ]),
    widget(0, 15, 'handler latency (ms)', [metric(METRIC.handlerLatency, 'p50', 'p50'), metric(METRIC.handlerLatency, 'p99', 'p99')]),
  ];
  // The retry function's runs: each a durable execution's invocation (the first, and one after each wait ends).
  widgets.push(widget(0, 21, 'retry function runs', [
    ['AWS/Lambda', 'Invocations', 'FunctionName', input.retryFunctionName, { stat: 'Sum', label: 'invocations' }],
    ['AWS/Lambda', 'Errors', 'FunctionName', input.retryFunctionName, { stat: 'Sum', label: 'failed' }],
    ['AWS/Lambda', 'Duration', 'FunctionName', input.retryFunctionName, { stat: 'Sum', label: 'run time (ms, summed)', yAxis: 'right' }],
  ]));
  if (input.committerName !== undefined) {
    widgets.push(widget(12, 15, 'committer runs', [
      ['AWS/Lambda', 'Invocations', 'FunctionName', input.committerName, { stat: 'Sum', label: 'runs' }],
      ['AWS/Lambda', 'Errors', 'FunctionName', input.committerName, { stat: 'Sum', label: 'failed' }],
    ]));
  }
  return { widgets };
}
