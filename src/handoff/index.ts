export { HandOffError } from './errors';
export {
  HandOffHeader,
  HEADER_PREFIX,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_ERROR_NAME_LENGTH,
  MAX_REASON_LENGTH,
  handOffMessage,
  originOf,
  readHandOffHeaders,
  truncateText,
} from './headers';
export type { HandOffHeaders, HeaderList } from './types';
export type { HandOffItem, HandOffKind, HandOffOrigin, HandOffOutcome, RefusalReason } from '../ports/handoff';
export { HAND_OFF_WRITER_DEFAULTS, HandOffWriter, producerRetry } from './writer';
export type { HandOffWriterOptions, HandOffWriterStats, ProducerFactory, WriteOptions } from './writer';
