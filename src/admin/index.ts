export { CREATE_TOPICS_READY_DEFAULTS, createTopicsReady, notReady } from './create-topics';
export type { CreateTopicsReadyOptions, CreateTopicsReadyResult, TopicsAdmin } from './create-topics';
export { TopicsNotReadyError } from './errors';
