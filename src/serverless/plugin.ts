import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE_DIR, bundleHandlers, handlerSourceFile, type BundleEntry } from './bundle';
import { customBlockSchema, DOCS, functionBlockSchema, PLUGIN_DEFAULTS, validateBlock, type CustomBlock } from './config';
import { AWS_IAM_MECHANISM, ENV } from '../options/constants';
import { plaintextSecrets } from './auth';
import { declaredTemplate, exampleNetworkParamWarning, existingVpcProblems, invokeLocalHint, loopbackEnvironmentProblems, mskServerlessRegionWarning, planVpcProblems, stackParametersWarning, undeclaredSendsWarning } from './checks';
import { functionRole, groupGrants, rolePolicyLength, ROLE_POLICY_LIMIT } from './iam';
import { finishTemplate } from './finish-template';
import { mskClusterNameToken, type PluginUtils, type Serverless } from './framework';
import { nameTheService, planFunction } from './plan';
import type { FunctionPlan, ServiceView, Statement } from './types';
import { retryDefinition } from './retry-function';
import { startOfflineTrigger, type OfflineKafkaTrigger } from './offline/trigger';
import { topicsResource } from './topics-resource';

const COMMITTER_OUT = 'kafka-lanes/committer';
const TOPICS_OUT = 'kafka-lanes/topics';
const TOPICS_PROVIDER_OUT = 'kafka-lanes/topics-provider';
const PRODUCE_OUT = 'kafka-lanes/produce';
const OPAQUE_BLOCK = { description: `kafka-lanes settings, validated by the kafka-lanes plugin (${DOCS}/options.md)` };

/**
 * The serverless plugin `kafka-lanes/serverless`. For every function with a `kafkaLanes:` block (validated through the
 * framework's schema and again here, so an unknown key fails even where the framework only warns) it sets the trigger's
 * consumer group, adds the retry function (the handler's code as a durable function, one trigger per retry tier), the
 * environment `lanes(...)` reads, the IAM statements, a committer on a schedule and the topics resource. Handlers are
 * bundled with esbuild. Under `serverless offline` it plays the Kafka triggers against a local broker.
 *
 * @example
 * # serverless.yml
 * plugins: [kafka-lanes/serverless, serverless-offline]
 * functions:
 *   orders:
 *     handler: functions/orders.handler
 *     events: [{ msk: { arn: ${param:mskArn}, topic: orders, batchSize: 500 } }]
 *     kafkaLanes: { group: orders-svc, retryTiers: [5s, 1m, 10m] }
 */
export class KafkaLanesPlugin {
  readonly hooks: Record<string, () => Promise<void> | void>;
  readonly #serverless: Serverless;
  readonly #log: PluginUtils['log'];
  #plans: FunctionPlan[] = [];
  #custom: CustomBlock = {};
  #trigger: OfflineKafkaTrigger | undefined;
  #bundled = false;
  /** Each group's topics resource, by the logical ID of its handler function (and of its retry function). */
  readonly #topicsResources = new Map<string, string>();
  /** The role the plugin made for a function, by the function's key. */
  readonly #roles = new Map<string, ReturnType<typeof functionRole>>();

  constructor(serverless: Serverless, _options: Record<string, unknown>, utils?: PluginUtils) {
    this.#serverless = serverless;
    this.#log = utils?.log ?? { notice: console.log, warning: console.warn, info: console.log };
    // The framework is told the blocks exist, not their shape: under `configValidationMode: error` it would
    // refuse a bad value in its own words (a bare pattern) before the plugin could name what was expected.
    // The plugin validates both blocks at `initialize` (unknown keys included), in every mode.
    serverless.configSchemaHandler.defineFunctionProperties('aws', { properties: { kafkaLanes: OPAQUE_BLOCK } });
    serverless.configSchemaHandler.defineCustomProperties({ properties: { kafkaLanes: OPAQUE_BLOCK } });
    this.hooks = {
      initialize: () => this.#initialize(),
      'before:package:createDeploymentArtifacts': () => this.#bundle('package'),
      'after:package:compileEvents': () => finishTemplate(this.#serverless, this.#plans, { topicsResources: this.#topicsResources, roles: this.#roles }),
      // `serverless offline start` and plain `serverless offline` (whose own hook blocks until Ctrl-C).
      'before:offline:start:init': () => this.#startOffline(false),
      'before:offline:start': () => this.#startOffline(true),
      'before:offline:start:end': () => this.#stopOffline(),
    };
  }

  /** The plans made at `initialize` (for tests and the offline trigger). */
  get plans(): readonly FunctionPlan[] {
    return this.#plans;
  }

  #fail(problems: readonly string[]): never {
    throw new this.#serverless.classes.Error(`kafka-lanes: invalid configuration:\n  - ${problems.join('\n  - ')}`, 'KAFKA_LANES_INVALID_CONFIG');
  }

  #initialize(): void {
    const { service } = this.#serverless;
    const problems: string[] = [];
    const custom = validateBlock(customBlockSchema, service.custom?.['kafkaLanes'], 'custom.kafkaLanes');
    problems.push(...custom.problems);
    this.#custom = custom.value ?? {};
    const provider = this.#serverless.getProvider('aws');
    const offline = this.#serverless.processedInput?.commands?.[0] === 'offline';
    const view: ServiceView = {
      service: service.service,
      stage: provider.getStage(),
      region: provider.getRegion(),
      offline,
      triggerLogicalId: (functionKey, trigger) =>
        'msk' in trigger
          ? provider.naming.getMSKEventLogicalId(functionKey, mskClusterNameToken(trigger.msk.arn), trigger.msk.topic)
          : provider.naming.getKafkaEventLogicalId(functionKey, trigger.kafka.topic),
      ...(service.provider.timeout === undefined ? {} : { providerTimeout: service.provider.timeout }),
      ...(service.provider.runtime === undefined ? {} : { providerRuntime: service.provider.runtime }),
    };
    const plans: FunctionPlan[] = [];
    for (const key of service.getAllFunctions()) {
      const fn = service.functions[key];
      if (fn?.kafkaLanes === undefined) continue;
      const block = validateBlock(functionBlockSchema, fn.kafkaLanes, `functions.${key}.kafkaLanes`);
      problems.push(...block.problems);
      if (block.value === undefined) continue;
      const planned = planFunction(view, key, fn, block.value);
      problems.push(...planned.problems);
      if (planned.plan !== undefined) plans.push(planned.plan);
    }
    const providerEnvironment = (service.provider as { environment?: Record<string, unknown> }).environment ?? {};
    for (const plan of plans) {
      const fn = service.functions[plan.functionKey]!;
      const plain = plaintextSecrets(plan.functionKey, { ...providerEnvironment, ...fn.environment }, plan.environment);
      problems.push(...plain.problems);
      if (!offline) plain.warnings.forEach((warning) => this.#log.warning(warning));
    }
    // A group's functions reach its brokers and Redis: from a VPC when they are private.
    for (const plan of offline ? [] : plans) {
      const found = planVpcProblems(plan, service.functions[plan.functionKey]!.vpc ?? (service.provider as { vpc?: unknown }).vpc);
      problems.push(...found.problems);
      found.warnings.forEach((warning) => this.#log.warning(`kafka-lanes: ${warning}`));
    }
    if (!offline) {
      // Every variable of every function, the service's own included (the provider's apply to all functions).
      problems.push(...loopbackEnvironmentProblems('provider.environment', providerEnvironment));
      for (const key of service.getAllFunctions()) problems.push(...loopbackEnvironmentProblems(`functions.${key}.environment`, service.functions[key]?.environment));
    }
    if (problems.length > 0) this.#fail([...problems, ...invokeLocalHint(this.#serverless.processedInput?.commands ?? [], problems)]);
    if (!offline) {
      const declared = declaredTemplate((service as unknown as { resources?: unknown }).resources);
      for (const warning of [
        stackParametersWarning((service.provider.stackParameters ?? []).map((parameter) => String(parameter.ParameterKey))), mskServerlessRegionWarning(provider.getRegion(), declared.resources),
        exampleNetworkParamWarning(this.#serverless.processedInput?.options?.param, this.#serverless.configurationInput?.params, declared.parameters),
      ]) if (warning !== undefined) this.#log.warning(`kafka-lanes: ${warning}`);
      if (existingVpcProblems(declared.parameters).length > 0) this.#fail(existingVpcProblems(declared.parameters));
    }

    for (const plan of plans) {
      const fn = service.functions[plan.functionKey]!;
      const events = fn.events ?? [];
      const sourceIndex = events.findIndex((event) => 'msk' in event || 'kafka' in event);
      events[sourceIndex] = plan.source as unknown as Record<string, unknown>;
      fn.events = events;
      fn.environment = { ...fn.environment, ...(offline ? this.#offlineEnvironment(plan.environment) : plan.environment) };
      // The retry tiers' triggers are the retry function's: the handler's code as a durable function (plan.ts).
      if (service.functions[plan.retry.key] !== undefined) this.#fail([`functions.${plan.retry.key}: the name of the retry function kafka-lanes adds for \`${plan.functionKey}\` is taken`]);
      service.functions[plan.retry.key] = retryDefinition(fn, plan);
      if (plan.committer !== undefined) {
        if (service.functions[plan.committer.key] !== undefined) {
          this.#fail([`functions.${plan.committer.key}: the name of the committer kafka-lanes adds for \`${plan.functionKey}\` is taken`]);
        }
        service.functions[plan.committer.key] = {
          ...plan.committer.definition,
          ...(offline ? { environment: this.#offlineEnvironment(plan.environment) } : {}),
          handler: `${BUNDLE_DIR}/${COMMITTER_OUT}.handler`,
        };
      }
      // The produce function is for a deployed cluster: not under `serverless offline` (`kafka-lanes produce` is).
      if (plan.producer !== undefined && !offline) {
        if (service.functions[plan.producer.key] !== undefined) this.#fail([`functions.${plan.producer.key}: the name of the produce function kafka-lanes adds for \`${plan.functionKey}\` is taken`]);
        service.functions[plan.producer.key] = { ...plan.producer.definition, handler: `${BUNDLE_DIR}/${PRODUCE_OUT}.handler` };
      }
    }
    if (!offline) this.#addTopicsResources(plans);
    if (offline) this.#blankDeployTimeSettings(plans);
    nameTheService(service, plans);
    for (const plan of plans.filter((p) => p.mode === 'provisioned')) {
      this.#log.warning(
        `kafka-lanes: functions.${plan.functionKey} is in provisioned mode: its provisionedPollerConfig applies to each of its ` +
          `${plan.retryTriggers.length + 1} triggers (the source and one per retry tier), and provisioned pollers are paid per trigger`,
      );
    }
    // Logs kept for a bounded time unless the service says otherwise (the framework's default keeps them forever).
    if (plans.length > 0) service.provider.logRetentionInDays ??= PLUGIN_DEFAULTS.logRetentionInDays;
    this.#grantRoles(plans);
    this.#plans = plans;
  }

  /**
   * Each group's topics resource, its provider (topics-provider.ts) and worker (topics-handler.ts), and the brokers it
   * answers given to the group's functions (topics-resource.ts): not under `serverless offline`, where no
   * CloudFormation runs.
   */
  #addTopicsResources(plans: readonly FunctionPlan[]): void {
    const { service } = this.#serverless;
    const naming = this.#serverless.getProvider('aws').naming;
    const resources = this.#additionalResources();
    for (const plan of plans) {
      for (const [key, what] of [[plan.topics.key, 'topics worker'], [plan.topics.provider.key, "topics resource's provider"]] as const) {
        if (service.functions[key] !== undefined) this.#fail([`functions.${key}: the name of the ${what} kafka-lanes adds for \`${plan.functionKey}\` is taken`]);
      }
      const made = topicsResource(plan, {
        providerLogicalId: naming.getLambdaLogicalId(plan.topics.provider.key),
        workerLogicalId: naming.getLambdaLogicalId(plan.topics.key),
        resourceLogicalId: `${naming.getLambdaLogicalId(plan.functionKey).replace(/LambdaFunction$/, '')}KafkaLanesTopics`,
      });
      service.functions[plan.topics.key] = { ...plan.topics.definition, handler: `${BUNDLE_DIR}/${TOPICS_OUT}.handler` };
      const { key: providerKey, ...provider } = plan.topics.provider;
      service.functions[providerKey] = { ...provider, environment: made.providerEnvironment, handler: `${BUNDLE_DIR}/${TOPICS_PROVIDER_OUT}.handler` };
      resources[made.logicalId] = made.resource;
      this.#topicsResources.set(naming.getLambdaLogicalId(plan.functionKey), made.logicalId);
      this.#topicsResources.set(naming.getLambdaLogicalId(plan.retry.key), made.logicalId);
      // The handler, the retry function and the produce function take the brokers the resource answers, as the committer does.
      for (const key of [plan.functionKey, plan.retry.key, ...(plan.producer === undefined ? [] : [plan.producer.key])]) {
        const fn = service.functions[key]!;
        fn.environment = { ...fn.environment, ...made.handlerEnvironment };
        for (const name of made.removed) delete fn.environment[name];
      }
      const committer = plan.committer === undefined ? undefined : service.functions[plan.committer.key];
      if (committer !== undefined) committer.environment = made.committerEnvironment;
    }
  }

  /**
   * The group's settings under `serverless offline`: a value CloudFormation would resolve at deploy time (the
   * stack's ElastiCache, the MSK cluster) means the local stack here: `custom.kafkaLanes.offline.redis`, and the
   * trigger's local broker (set by the offline trigger); MSK IAM and SCRAM are not used against the local broker,
   * and a Redis AUTH secret goes with the deployed Redis it belongs to (or with a CloudFormation reference).
   */
  #offlineEnvironment(environment: Readonly<Record<string, unknown>>): Record<string, unknown> {
    const local: Record<string, unknown> = { ...environment };
    const redisDeployed = typeof local[ENV.redisUrl] === 'object' || typeof local[ENV.redisClusterNodes] === 'object';
    if (redisDeployed || typeof local[ENV.redisAuthSecret] === 'object') delete local[ENV.redisAuthSecret];
    if (redisDeployed) {
      delete local[ENV.redisClusterNodes];
      delete local[ENV.redisTls];
      local[ENV.redisUrl] = this.#custom.offline?.redis ?? PLUGIN_DEFAULTS.offlineRedis;
    }
    delete local[ENV.mskClusterArn];
    if (local[ENV.saslMechanism] === AWS_IAM_MECHANISM || local[ENV.saslSecret] !== undefined) delete local[ENV.saslMechanism];
    delete local[ENV.saslSecret];
    delete local[ENV.ssl];
    return local;
  }

  /**
   * A role of its own for each function of a group (handler and committer), with the group's least-privilege
   * grants (iam.ts) and, for the handler, the provider's own statements and managed policies (the user's code
   * runs there). A custom provider role, or a function's own `role`, is left alone: the grants it needs are printed.
   */
  #grantRoles(plans: readonly FunctionPlan[]): void {
    const { service } = this.#serverless;
    const iam = service.provider.iam ?? {};
    const providerVpc = (service.provider as { vpc?: unknown }).vpc;
    const resources = this.#additionalResources();
    const provider = this.#serverless.getProvider('aws');
    const problems: string[] = [];
    for (const plan of plans) {
      const fn = service.functions[plan.functionKey]!;
      const made = (compact: boolean): Array<{ key: string; logicalId: string; role: ReturnType<typeof functionRole> }> => {
        const grants = groupGrants(plan, (fn.vpc ?? providerVpc) !== undefined, compact);
        // The handler's code runs in the handler and in the retry function: both take the provider's own statements.
        const roles: Array<[string, Statement[], boolean]> = [[plan.functionKey, grants.handler, true], [plan.retry.key, grants.retry, true]];
        if (plan.committer !== undefined) roles.push([plan.committer.key, grants.committer, false]);
        if (service.functions[plan.topics.key] !== undefined) roles.push([plan.topics.key, grants.topics, false]);
        if (service.functions[plan.topics.provider.key] !== undefined) roles.push([plan.topics.provider.key, grants.topicsProvider, false]);
        if (plan.producer !== undefined && service.functions[plan.producer.key] !== undefined) roles.push([plan.producer.key, grants.producer, false]);
        const out: Array<{ key: string; logicalId: string; role: ReturnType<typeof functionRole> }> = [];
        for (const [key, statements, isHandler] of roles) {
          const target = service.functions[key]!;
          if (typeof iam.role === 'string' || target['role'] !== undefined) {
            if (!compact) this.#log.warning(`kafka-lanes: functions.${key} has a role of its own (${typeof iam.role === 'string' ? 'provider.iam.role' : 'role'}); give it ${JSON.stringify(statements)}`);
            continue;
          }
          const own = isHandler && typeof iam.role === 'object' ? iam.role : undefined;
          const role = functionRole(String(target.name ?? `${service.service}-${provider.getStage()}-${key}`), [...statements, ...((own?.statements ?? []) as unknown as Statement[])], {
            ...(own?.managedPolicies === undefined ? {} : { managedPolicyArns: own.managedPolicies }),
            ...(own?.permissionsBoundary === undefined ? {} : { permissionsBoundary: own.permissionsBoundary }),
          });
          out.push({ key, logicalId: `${provider.naming.getLambdaLogicalId(key).replace(/LambdaFunction$/, '')}KafkaLanesRole`, role });
        }
        return out;
      };
      // IAM refuses a role whose inline policies pass its size quota: with one ARN per retry tier first, else with
      // the tiers under one wildcard, else refused at package time rather than by CloudFormation half-way.
      let roles = made(false);
      if (roles.some(({ role }) => rolePolicyLength(role) > ROLE_POLICY_LIMIT)) roles = made(true);
      for (const { key, logicalId, role } of roles) {
        const length = rolePolicyLength(role);
        if (length > ROLE_POLICY_LIMIT) {
          problems.push(
            `functions.${key}: expected a role policy of at most ${ROLE_POLICY_LIMIT} characters (IAM's quota on a role's inline policies), ` +
              `got up to ${length} with the retry tiers under one wildcard: fewer retry tiers or outputs, a shorter group, or fewer statements in provider.iam.role`,
          );
          continue;
        }
        resources[logicalId] = role;
        this.#roles.set(key, role);
        service.functions[key]!['role'] = logicalId;
      }
    }
    if (problems.length > 0) this.#fail(problems);
  }

  /** `resources.Resources` of serverless.yml, where the framework merges what the plugin adds into the template. */
  #additionalResources(): Record<string, unknown> {
    const service = this.#serverless.service as unknown as { resources?: unknown };
    // `resources:` may be a list of fragments (`- ${file(...)}`); the framework merges every one of them.
    if (Array.isArray(service.resources)) {
      const own = { Resources: {} as Record<string, unknown> };
      service.resources.push(own);
      return own.Resources;
    }
    const block = (service.resources ??= {}) as { Resources?: Record<string, unknown> };
    return (block.Resources ??= {});
  }

  /**
   * A `KAFKA_LANES_*` variable of the provider CloudFormation resolves at deploy time (an AUTH token from
   * Secrets Manager) has no value under `serverless offline`: unset for the groups' functions (empty counts as
   * unset), not passed on as an object.
   */
  #blankDeployTimeSettings(plans: readonly FunctionPlan[]): void {
    const { service } = this.#serverless;
    const provided = (service.provider as { environment?: Record<string, unknown> }).environment ?? {};
    const blanks = Object.fromEntries(
      Object.entries(provided).filter(([name, value]) => name.startsWith('KAFKA_LANES_') && typeof value === 'object').map(([name]) => [name, '']),
    );
    for (const plan of plans) {
      for (const key of [plan.functionKey, plan.retry.key, ...(plan.committer === undefined ? [] : [plan.committer.key])]) {
        const fn = service.functions[key];
        if (fn !== undefined) fn.environment = { ...blanks, ...fn.environment };
      }
    }
  }

  /**
   * A framework function's source inside this package (the committer's, the topics resource's): TypeScript in a
   * checkout, the built ES module beside the built plugin (dist/<module>.mjs beside dist/serverless.cjs) in the
   * installed package.
   */
  #entry(module: string): string {
    for (const file of [`${module}.ts`, `${module}.mjs`]) {
      const path = join(__dirname, file);
      if (existsSync(path)) return path;
    }
    throw new Error(`kafka-lanes: ${module} not found next to ${__filename}`);
  }

  async #bundle(purpose: 'package' | 'offline'): Promise<void> {
    if (this.#bundled) return;
    this.#bundled = true;
    const { service } = this.#serverless;
    const servicePath = this.#serverless.serviceDir ?? this.#serverless.config.servicePath;
    const bundleUser = this.#custom.bundle !== false;
    const committerKeys = new Set(this.#plans.flatMap((plan) => (plan.committer === undefined ? [] : [plan.committer.key])));
    const topicsKeys = new Set(this.#plans.map((plan) => plan.topics.key));
    const providerKeys = new Set(this.#plans.map((plan) => plan.topics.provider.key));
    const produceKeys = new Set(this.#plans.flatMap((plan) => (plan.producer === undefined ? [] : [plan.producer.key])));
    const entries: BundleEntry[] = [];
    for (const plan of purpose === 'package' ? this.#plans : []) {
      const handler = service.functions[plan.functionKey]!.handler;
      const warning = typeof handler === 'string' ? undeclaredSendsWarning(`functions.${plan.functionKey}`, readFileSync(handlerSourceFile(servicePath, handler), 'utf8'), plan.outputs) : undefined;
      if (warning !== undefined) this.#log.warning(`kafka-lanes: ${warning}`);
    }
    for (const key of service.getAllFunctions()) {
      const fn = service.functions[key]!;
      const runtime = String(fn['runtime'] ?? service.provider.runtime ?? 'nodejs');
      if (committerKeys.has(key)) {
        entries.push({ key, entryFile: this.#entry('committer-handler'), exportName: 'handler', outName: COMMITTER_OUT });
      } else if (topicsKeys.has(key)) {
        entries.push({ key, entryFile: this.#entry('topics-handler'), exportName: 'handler', outName: TOPICS_OUT });
      } else if (providerKeys.has(key)) {
        entries.push({ key, entryFile: this.#entry('topics-provider'), exportName: 'handler', outName: TOPICS_PROVIDER_OUT });
      } else if (produceKeys.has(key)) {
        entries.push({ key, entryFile: this.#entry('produce-handler'), exportName: 'handler', outName: PRODUCE_OUT });
      } else if (bundleUser && runtime.startsWith('nodejs') && typeof fn.handler === 'string') {
        entries.push({ key, handler: fn.handler });
      }
    }
    const handlers = await bundleHandlers(servicePath, entries);
    for (const [key, handler] of handlers) service.functions[key]!.handler = handler;
    this.#log.info(`kafka-lanes: bundled ${handlers.size} handler(s) with esbuild into ${BUNDLE_DIR}/`);
    if (purpose === 'package' && bundleUser) {
      // The bundles hold everything the handlers need: ship them alone, not the service's node_modules.
      const pkg = (service.package ??= {});
      // Source maps stay on disk for local debugging: Node.js reads none without --enable-source-maps.
      pkg.patterns = ['!**', `${BUNDLE_DIR}/**`, `!${BUNDLE_DIR}/**/*.map`, ...(pkg.patterns ?? [])];
      pkg.excludeDevDependencies = false;
    }
  }

  async #startOffline(blocking: boolean): Promise<void> {
    if (this.#trigger !== undefined) return;
    await this.#bundle('offline');
    this.#trigger = await startOfflineTrigger({
      serverless: this.#serverless as unknown as Parameters<typeof startOfflineTrigger>[0]['serverless'],
      custom: this.#custom,
      plans: this.#plans,
      log: this.#log,
      // Plain `serverless offline` ends with process.exit as soon as its own servers stop: the trigger
      // finishes its in-flight invocations and commits first.
      holdExit: blocking,
    });
  }

  async #stopOffline(): Promise<void> {
    await this.#trigger?.stop();
  }
}
