export type { AdmitRecord, AdmitResult, AdmitStatus } from './admission';
export { SYSTEM_CLOCK, type Clock } from './clock';
export type { CompletionPort } from './completion';
export type { CallLimits } from './limits';
export type { EffectsPort, OutputId, RecordSteps, StepsRef, StoredSteps } from './effects';
export type { HandOffItem, HandOffKind, HandOffOrigin, HandOffOutcome, HandOffSink, OutputMessage, OutputSink, RefusalReason } from './handoff';
export type { CopyClaim, CopyClaimRequest, HeadAdvance, HeadClaim, HeadClaimRequest, LaneBlock, LaneHead, LaneHold, LaneRelease, NewLaneHead, ParkedRecord } from './lane-head';
export { LaneConflictError, NotAdmittedError, NotHeadError, StaleAttemptError, StaleEpochError } from './errors';
export type { OriginState, PartitionAudit, PartitionCaps, PartitionRef, PartitionWindow } from './partition';
