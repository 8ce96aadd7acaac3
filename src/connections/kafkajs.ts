import type * as KafkaJs from 'kafkajs';
import { commonJsExports } from './interop';

/** The kafkajs module's exports. */
export type KafkaJsModule = typeof KafkaJs;

let kafkajs: KafkaJsModule | undefined;
let importing: Promise<KafkaJsModule> | undefined;

/**
 * The kafkajs module, loaded on the first call: most invocations hand nothing off, so a cold start does not pay
 * for reading, compiling or evaluating kafkajs (~270 KiB of a minified bundle). This is the loader of the
 * handler's path: an `import()`, which esbuild turns into a chunk of its own in an ESM bundle with `splitting`
 * (read only when called) and into a wrapped module evaluated on the first call in a CommonJS bundle. Import only
 * types from 'kafkajs' elsewhere on the handler's path: a top-level `import { Kafka } from 'kafkajs'` would run it
 * at load.
 *
 * @example
 * const { Kafka, logLevel } = await importKafkaJs();
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9092'], logLevel: logLevel.ERROR });
 */
export function importKafkaJs(): Promise<KafkaJsModule> {
  if (kafkajs !== undefined) return Promise.resolve(kafkajs);
  importing ??= import('kafkajs').then(
    (module) => (kafkajs ??= commonJsExports(module, 'Kafka')),
    (error: unknown) => {
      importing = undefined;
      throw error;
    },
  );
  return importing;
}
