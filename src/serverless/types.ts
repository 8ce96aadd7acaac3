import type { FunctionBlock, SchemaRegistryBlock } from './config';

// The plugin's nouns, below every file that plans, checks or applies them: the framework's view of a function and
// its Kafka trigger, and the plan of one group (plan.ts makes it, the other files read it).

/** How the hand-off producers and the committer authenticate to Kafka. */
export type KafkaAuth = 'iam' | 'scram' | 'tls' | 'none';

/** One IAM policy statement. */
export interface Statement {
  readonly Effect: 'Allow';
  readonly Action: readonly string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, unknown>;
}

/** A Kafka trigger as serverless.yml writes it (`msk` or `kafka` event); only what the plugin reads or writes. */
export interface TriggerSettings {
  topic: string;
  arn?: unknown;
  bootstrapServers?: string[];
  batchSize?: number;
  maximumBatchingWindow?: number;
  startingPosition?: string;
  startingPositionTimestamp?: number;
  consumerGroupId?: string;
  provisionedPollerConfig?: { minimumPollers?: number; maximumPollers?: number };
  [other: string]: unknown;
}

export type TriggerEvent = { msk: TriggerSettings } | { kafka: TriggerSettings };

export interface FunctionView {
  name?: string;
  handler?: string;
  timeout?: number;
  events?: Array<Record<string, unknown>>;
  environment?: Record<string, unknown>;
  vpc?: unknown;
  kafkaLanes?: unknown;
  [other: string]: unknown;
}

export interface ServiceView {
  service: string;
  stage: string;
  providerTimeout?: number;
  /** `provider.runtime`: the runtime of every function that names none (the retry function's among them). */
  providerRuntime?: string;
  /** The service's region (`provider.region`); an MSK trigger's cluster must be in it. */
  region?: string;
  /** `serverless offline`: the local stack is the target, so loopback endpoints are expected. */
  offline?: boolean;
  /** The logical ID the framework gives a function's Kafka trigger (its naming, passed in to keep this pure). */
  triggerLogicalId?: (functionKey: string, trigger: TriggerEvent) => string;
}

/** What the plugin adds for one function with a `kafkaLanes:` block. */
export interface FunctionPlan {
  readonly functionKey: string;
  readonly group: string;
  readonly tiers: readonly string[];
  /** `provisioned`: the trigger has `provisionedPollerConfig`, so it can report batch item failures. */
  readonly mode: 'provisioned' | 'on-demand';
  readonly auth: KafkaAuth;
  /** The source trigger, with its `consumerGroupId` set to the group. */
  readonly source: TriggerEvent;
  /** One trigger per retry tier, on the retry function. */
  readonly retryTriggers: readonly TriggerEvent[];
  /**
   * The retry function `<function>Retry`: the handler's code as a Lambda durable function (`durableConfig`, compiled into
   * the function's `DurableConfig`), whose triggers are the retry tiers'. A copy not yet due waits in a suspended durable
   * execution, billed no compute. Its definition is the handler's but for what `retryDefinition` says.
   */
  readonly retry: {
    readonly key: string;
    readonly name: string;
    readonly description: string;
    readonly durableConfig: { readonly executionTimeout: number; readonly retentionPeriodInDays: number };
  };
  /**
   * The group's resolved settings as environment variables, given as they are to the handler and to its
   * committer: one resolution, so the two cannot disagree on tiers, policy, Redis, Kafka or auth.
   */
  readonly environment: Readonly<Record<string, unknown>>;
  readonly committer: { readonly key: string; readonly definition: FunctionView } | undefined;
  /** The topics the handler writes with `ctx.send` (`kafkaLanes.outputs`). */
  readonly outputs: readonly string[];
  /**
   * The group's topics resource (`Custom::KafkaLanesTopics`): its worker (`key`, `definition`: in the function's VPC,
   * with the group's Kafka auth and nothing of Redis), its provider (outside any VPC: answers CloudFormation, asks MSK
   * for the brokers, invokes the worker; see topics-provider.ts) and the resource's properties, the cluster among them.
   */
  readonly topics: {
    readonly key: string;
    readonly definition: FunctionView;
    readonly provider: FunctionView & { readonly key: string };
    readonly properties: Readonly<Record<string, unknown>>;
  };
  /** The produce function (`kafkaLanes.produce: true`, produce-handler.ts): in the VPC, writing the source topic only. */
  readonly producer: { readonly key: string; readonly definition: FunctionView } | undefined;
  /** The source trigger's own schema registry integration (`kafkaLanes.schemaRegistry`, schema-registry.ts). */
  readonly schemaRegistry?: SchemaRegistryBlock;
}

/**
 * What a group's plan is made from (plan.ts gathers it once): the function as serverless.yml writes it, its one Kafka
 * trigger, and what follows from them, each of the plan's parts and checks reading what it needs.
 */
export interface FunctionFacts {
  /** `functions.<key>`: where every problem found points. */
  readonly where: string;
  readonly functionKey: string;
  readonly fn: FunctionView;
  readonly block: FunctionBlock;
  readonly kind: 'msk' | 'kafka';
  readonly settings: TriggerSettings;
  /** The function's deployed name (`fn.name`, else `<service>-<stage>-<key>`). */
  readonly name: string;
  readonly group: string;
  readonly tiers: readonly string[];
  /** The function's timeout in seconds (its own, else the provider's, else the framework's). */
  readonly timeout: number;
  readonly durableConfig: FunctionPlan['retry']['durableConfig'];
}
