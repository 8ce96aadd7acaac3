import { readFileSync } from 'node:fs';
import { addGroupFunctions, blankDeployTimeSettings } from './apply-plan';
import { BUNDLE_DIR, bundleEntries, bundleHandlers, frameworkHandler, handlerSourceFile } from './bundle';
import { customBlockSchema, DOCS, functionBlockSchema, PLUGIN_DEFAULTS, validateBlock, type CustomBlock } from './config';
import { plaintextSecrets } from './auth';
import { declaredTemplate, exampleNetworkParamWarning, existingVpcProblems, invokeLocalHint, loopbackEnvironmentProblems, mskServerlessRegionWarning, planVpcProblems, stackParametersWarning, undeclaredSendsWarning } from './checks';
import { functionRole, groupGrants, rolePolicyLength, ROLE_POLICY_LIMIT } from './iam';
import { finishTemplate } from './finish-template';
import { mskClusterNameToken, type PluginUtils, type Serverless } from './framework';
import { nameTheService, planFunction } from './plan';
import type { FunctionPlan, ServiceView, Statement } from './types';
import { startOfflineTrigger, type OfflineKafkaTrigger } from './offline/trigger';
import { topicsResource } from './topics-resource';

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
    const offline = this.#serverless.processedInput?.commands?.[0] === 'offline';
    const { plans, problems } = this.#planAll(offline);
    problems.push(...this.#serviceProblems(plans, offline));
    if (problems.length > 0) this.#fail([...problems, ...invokeLocalHint(this.#serverless.processedInput?.commands ?? [], problems)]);
    if (!offline) this.#checkStack();
    const target = offline ? { offline, redis: this.#custom.offline?.redis ?? PLUGIN_DEFAULTS.offlineRedis } : { offline };
    for (const plan of plans) {
      const taken = addGroupFunctions(service.functions, plan, target);
      if (taken !== undefined) this.#fail([taken]);
    }
    if (!offline) this.#addTopicsResources(plans);
    if (offline) blankDeployTimeSettings(service, plans);
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

  /** Validates `custom.kafkaLanes` and every function's `kafkaLanes` block, and plans each group (plan.ts). */
  #planAll(offline: boolean): { plans: FunctionPlan[]; problems: string[] } {
    const { service } = this.#serverless;
    const custom = validateBlock(customBlockSchema, service.custom?.['kafkaLanes'], 'custom.kafkaLanes');
    const problems = [...custom.problems];
    this.#custom = custom.value ?? {};
    const provider = this.#serverless.getProvider('aws');
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
    return { plans, problems };
  }

  /** What the service around the groups refuses: secrets in plain text, private endpoints out of reach, loopback addresses. */
  #serviceProblems(plans: readonly FunctionPlan[], offline: boolean): string[] {
    const { service } = this.#serverless;
    const problems: string[] = [];
    const providerEnvironment = service.provider.environment ?? {};
    for (const plan of plans) {
      const fn = service.functions[plan.functionKey]!;
      const plain = plaintextSecrets(plan.functionKey, { ...providerEnvironment, ...fn.environment }, plan.environment);
      problems.push(...plain.problems);
      if (!offline) plain.warnings.forEach((warning) => this.#log.warning(warning));
    }
    if (offline) return problems;
    // A group's functions reach its brokers and Redis: from a VPC when they are private.
    for (const plan of plans) {
      const found = planVpcProblems(plan, service.functions[plan.functionKey]!.vpc ?? (service.provider as { vpc?: unknown }).vpc);
      problems.push(...found.problems);
      found.warnings.forEach((warning) => this.#log.warning(`kafka-lanes: ${warning}`));
    }
    // Every variable of every function, the service's own included (the provider's apply to all functions).
    problems.push(...loopbackEnvironmentProblems('provider.environment', providerEnvironment));
    for (const key of service.getAllFunctions()) problems.push(...loopbackEnvironmentProblems(`functions.${key}.environment`, service.functions[key]?.environment));
    return problems;
  }

  /** What the stack the service declares warns of (its parameters, its region, the example's network) or refuses. */
  #checkStack(): void {
    const { service } = this.#serverless;
    const declared = declaredTemplate((service as unknown as { resources?: unknown }).resources);
    for (const warning of [
      stackParametersWarning((service.provider.stackParameters ?? []).map((parameter) => String(parameter.ParameterKey))),
      mskServerlessRegionWarning(this.#serverless.getProvider('aws').getRegion(), declared.resources),
      exampleNetworkParamWarning(this.#serverless.processedInput?.options?.param, this.#serverless.configurationInput?.params, declared.parameters),
    ]) if (warning !== undefined) this.#log.warning(`kafka-lanes: ${warning}`);
    if (existingVpcProblems(declared.parameters).length > 0) this.#fail(existingVpcProblems(declared.parameters));
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
      service.functions[plan.topics.key] = { ...plan.topics.definition, handler: frameworkHandler('topics') };
      const { key: providerKey, ...provider } = plan.topics.provider;
      service.functions[providerKey] = { ...provider, environment: made.providerEnvironment, handler: frameworkHandler('topicsProvider') };
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

  async #bundle(purpose: 'package' | 'offline'): Promise<void> {
    if (this.#bundled) return;
    this.#bundled = true;
    const { service } = this.#serverless;
    const servicePath = this.#serverless.serviceDir ?? this.#serverless.config.servicePath;
    const bundleUser = this.#custom.bundle !== false;
    for (const plan of purpose === 'package' ? this.#plans : []) {
      const handler = service.functions[plan.functionKey]!.handler;
      const warning = typeof handler === 'string' ? undeclaredSendsWarning(`functions.${plan.functionKey}`, readFileSync(handlerSourceFile(servicePath, handler), 'utf8'), plan.outputs) : undefined;
      if (warning !== undefined) this.#log.warning(`kafka-lanes: ${warning}`);
    }
    const entries = bundleEntries(service, this.#plans, bundleUser);
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
