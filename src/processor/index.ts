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
} from './processor';
export { laneIdOf, PARTITION_LANE, NULL_KEY_LANE } from './lane-id';
export { decideFailure, type FailureDecision, type DeadLetterReason } from './outcome';
export { createTelemetry, importTelemetry, METRIC, type Telemetry } from './telemetry';
