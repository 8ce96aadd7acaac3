import type { KafkaJsModule } from './kafkajs';

let kafkajs: KafkaJsModule | undefined;

/**
 * The kafkajs module, synchronously, loaded on the first call: for callers that need it synchronously (the
 * hand-off writer's partitioner) or are off the handler's path (the committer, the CLI). Its own file, apart
 * from `importKafkaJs`: esbuild keeps a file's `require` in the chunk of the file, and the handler's chunk must
 * not carry kafkajs.
 *
 * @example
 * const partitioner = loadKafkaJs().Partitioners.DefaultPartitioner();
 */
export function loadKafkaJs(): KafkaJsModule {
  // A static `require` (not `import()`): bundlers keep it in the bundle, and the callers are synchronous.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  kafkajs ??= require('kafkajs') as KafkaJsModule;
  return kafkajs;
}
