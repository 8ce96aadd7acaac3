import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { addAlarms } from './alarms-hook';
import { BUNDLE_DIR, bundleHandlers, type BundleEntry } from './bundle';
import { customBlockSchema, frameworkSchema, functionBlockSchema, validateBlock, type CustomBlock } from './config';
import { iamStatements, planFunction, type FunctionPlan, type FunctionView } from './plan';
import { startOfflineTrigger, type OfflineKafkaTrigger } from './offline/trigger';

/** The parts of the framework's `serverless` object the plugin uses (osls, the Serverless Framework v3 line). */
export interface Serverless {
  readonly serviceDir?: string;
  readonly config: { readonly servicePath: string };
  readonly classes: { readonly Error: new (message: string, code?: string) => Error };
  readonly configSchemaHandler: {
    defineFunctionProperties(provider: string, schema: Record<string, unknown>): void;
    defineCustomProperties(schema: Record<string, unknown>): void;
  };
  readonly service: {
    service: string;
    custom?: Record<string, unknown>;
    package?: { patterns?: string[]; excludeDevDependencies?: boolean; individually?: boolean };
    provider: {
      name: string;
      stage?: string;
      region?: string;
      runtime?: string;
      timeout?: number;
      iam?: { role?: string | { statements?: Array<Record<string, unknown>> } };
      compiledCloudFormationTemplate: { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    };
    functions: Record<string, FunctionView>;
    getAllFunctions(): string[];
  };
  getProvider(name: string): { naming: { getLambdaLogicalId(functionKey: string): string }; getStage(): string };
}

export interface PluginUtils {
  readonly log: { notice(message: string): void; warning(message: string): void; info(message: string): void };
}

const COMMITTER_OUT = 'kafka-lanes/committer';

/**
 * The serverless plugin `kafka-lanes/serverless`. For every function with a `kafkaLanes:` block (validated
 * through the framework's schema and again here, so an unknown key fails even where the framework only
 * warns) it sets the trigger's consumer group, adds one trigger per retry tier on the same handler, the
 * environment `lanes(...)` reads, the IAM statements, and a committer function on a schedule. Handlers are
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

  constructor(serverless: Serverless, _options: Record<string, unknown>, utils?: PluginUtils) {
    this.#serverless = serverless;
    this.#log = utils?.log ?? { notice: console.log, warning: console.warn, info: console.log };
    serverless.configSchemaHandler.defineFunctionProperties('aws', {
      properties: { kafkaLanes: frameworkSchema(functionBlockSchema) },
    });
    serverless.configSchemaHandler.defineCustomProperties({ properties: { kafkaLanes: frameworkSchema(customBlockSchema) } });
    this.hooks = {
      initialize: () => this.#initialize(),
      'before:package:createDeploymentArtifacts': () => this.#bundle('package'),
      'after:package:compileEvents': () => {
        this.#compileResponseTypes();
        addAlarms(this.#serverless, this.#plans);
      },
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
    throw new this.#serverless.classes.Error(
      `kafka-lanes: invalid configuration:\n  - ${problems.join('\n  - ')}`,
      'KAFKA_LANES_INVALID_CONFIG',
    );
  }

  #initialize(): void {
    const { service } = this.#serverless;
    const problems: string[] = [];
    const custom = validateBlock(customBlockSchema, service.custom?.['kafkaLanes'], 'custom.kafkaLanes');
    problems.push(...custom.problems);
    this.#custom = custom.value ?? {};
    const stage = this.#serverless.getProvider('aws').getStage();
    const plans: FunctionPlan[] = [];
    for (const key of service.getAllFunctions()) {
      const fn = service.functions[key];
      if (fn?.kafkaLanes === undefined) continue;
      const block = validateBlock(functionBlockSchema, fn.kafkaLanes, `functions.${key}.kafkaLanes`);
      problems.push(...block.problems);
      if (block.value === undefined) continue;
      const planned = planFunction(
        { service: service.service, stage, ...(service.provider.timeout === undefined ? {} : { providerTimeout: service.provider.timeout }) },
        key,
        fn,
        block.value,
      );
      problems.push(...planned.problems);
      if (planned.plan !== undefined) plans.push(planned.plan);
    }
    if (problems.length > 0) this.#fail(problems);

    for (const plan of plans) {
      const fn = service.functions[plan.functionKey]!;
      const events = fn.events ?? [];
      const sourceIndex = events.findIndex((event) => 'msk' in event || 'kafka' in event);
      events[sourceIndex] = plan.source as unknown as Record<string, unknown>;
      events.push(...(plan.retryTriggers as unknown as Array<Record<string, unknown>>));
      fn.events = events;
      fn.environment = { ...fn.environment, ...plan.environment };
      if (plan.committer !== undefined) {
        if (service.functions[plan.committer.key] !== undefined) {
          this.#fail([`functions.${plan.committer.key}: the name of the committer kafka-lanes adds for \`${plan.functionKey}\` is taken`]);
        }
        service.functions[plan.committer.key] = {
          ...plan.committer.definition,
          handler: `${BUNDLE_DIR}/${COMMITTER_OUT}.handler`,
        };
      }
    }
    const statements = iamStatements(plans);
    if (statements.length > 0) {
      const iam = (service.provider.iam ??= {});
      if (typeof iam.role === 'string') {
        this.#log.warning(`kafka-lanes: provider.iam.role is a custom role; give it ${JSON.stringify(statements)}`);
      } else {
        const role = iam.role ?? {};
        role.statements = [...(role.statements ?? []), ...statements];
        iam.role = role;
      }
    }
    this.#plans = plans;
  }

  /** The committer's source inside this package: TypeScript in a checkout, JavaScript once built. */
  #committerEntry(): string {
    for (const file of ['committer-handler.ts', 'committer-handler.js']) {
      const path = join(__dirname, file);
      if (existsSync(path)) return path;
    }
    throw new Error(`kafka-lanes: committer-handler not found next to ${__filename}`);
  }

  async #bundle(purpose: 'package' | 'offline'): Promise<void> {
    if (this.#bundled) return;
    this.#bundled = true;
    const { service } = this.#serverless;
    const servicePath = this.#serverless.serviceDir ?? this.#serverless.config.servicePath;
    const bundleUser = this.#custom.bundle !== false;
    const committerKeys = new Set(this.#plans.flatMap((plan) => (plan.committer === undefined ? [] : [plan.committer.key])));
    const entries: BundleEntry[] = [];
    for (const key of service.getAllFunctions()) {
      const fn = service.functions[key]!;
      const runtime = String(fn['runtime'] ?? service.provider.runtime ?? 'nodejs');
      if (committerKeys.has(key)) {
        entries.push({ key, entryFile: this.#committerEntry(), exportName: 'handler', outName: COMMITTER_OUT });
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
      pkg.patterns = ['!**', `${BUNDLE_DIR}/**`, ...(pkg.patterns ?? [])];
      pkg.excludeDevDependencies = false;
    }
  }

  #compileResponseTypes(): void {
    const provider = this.#serverless.getProvider('aws');
    const resources = this.#serverless.service.provider.compiledCloudFormationTemplate.Resources;
    for (const plan of this.#plans) {
      if (plan.mode !== 'provisioned') continue;
      const logicalId = provider.naming.getLambdaLogicalId(plan.functionKey);
      for (const resource of Object.values(resources)) {
        if (resource.Type !== 'AWS::Lambda::EventSourceMapping') continue;
        const target = resource.Properties['FunctionName'] as { 'Fn::GetAtt'?: unknown[] } | undefined;
        if (target?.['Fn::GetAtt']?.[0] !== logicalId) continue;
        // Kafka triggers honour a partial batch response only in provisioned mode (and only when asked).
        resource.Properties['FunctionResponseTypes'] = ['ReportBatchItemFailures'];
      }
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
