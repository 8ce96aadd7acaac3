export { lanes, type RecordPartOf } from './lanes';
export {
  Processor,
  BatchNotHandedOffError,
  DeadlineError,
  RecordTimeoutError,
  type LanesRecord,
  type LanesContext,
  type RecordHandler,
  type InvocationContext,
  type HandOffSink,
  type ProcessorParts,
} from './lanes-function';
export { laneIdOf, PARTITION_LANE, NULL_KEY_LANE } from '../engine/lane-id';
export { decideFailure, type FailureDecision, type DeadLetterReason } from '../engine/outcome';
export { createTelemetry, importTelemetry, METRIC, type Telemetry } from '../engine/telemetry';
