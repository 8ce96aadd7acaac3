/**
 * The serverless plugin (`plugins: [kafka-lanes/serverless]`) and what it is made of: option schemas, the
 * pure planning of what a `kafkaLanes:` block adds, the esbuild step, the committer's Lambda handler and the
 * offline Kafka trigger.
 */
export { KafkaLanesPlugin } from './plugin';
export type { Serverless, PluginUtils } from './framework';
export { functionBlockSchema, customBlockSchema, validateBlock, PLUGIN_DEFAULTS, AWS_LIMITS } from './config';
export type { FunctionBlock, CustomBlock } from './config';
export { planFunction, triggerOf } from './plan';
export type { FunctionPlan, TriggerEvent, TriggerSettings, Statement } from './types';
export { groupGrants, mskArns, functionRole, type GroupGrants } from './iam';
export { bundleHandlers, splitHandler, BUNDLE_DIR, type BundleEntry } from './bundle';
export { committerHandler, type CommitterRunSummary } from './committer-handler';
