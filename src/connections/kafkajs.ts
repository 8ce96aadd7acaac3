import type * as KafkaJs from 'kafkajs';

/** The kafkajs module's exports. */
export type KafkaJsModule = typeof KafkaJs;

let kafkajs: KafkaJsModule | undefined;

/**
 * The kafkajs module, loaded on the first call: most invocations hand nothing off, so a cold start does not pay
 * for evaluating kafkajs (~270 KiB of a bundle). Bundled with esbuild, the package stays in the bundle, wrapped
 * so that its body runs on the first `require`; a top-level `import { Kafka } from 'kafkajs'` would run it at
 * load. Import only types from 'kafkajs' elsewhere on the handler's path.
 *
 * @example
 * const { Kafka, logLevel } = loadKafkaJs();
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9092'], logLevel: logLevel.ERROR });
 */
export function loadKafkaJs(): KafkaJsModule {
  // A static `require` (not `import()`): bundlers keep it in the bundle, and the callers are synchronous.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  kafkajs ??= require('kafkajs') as KafkaJsModule;
  return kafkajs;
}
