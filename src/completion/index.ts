export * from './errors';
export { CompletionStore, DEFAULT_CAPS, DEFAULT_CALL_TIMEOUT_MS } from './store';
export { partitionKeys, partitionTag, parkKey, escapeName, trackedPartitionsKey } from './keys';
export type { FrontierReading } from './args';
export { defineScripts, SCRIPTS_VERSION, type RedisClient } from './scripts';
