import type { KafkaBatchResponse, PartitionBatch } from '../event';
import { SYSTEM_CLOCK, type Clock, type HandOffSink } from '../ports';
import { Invocation, type EngineParts } from './invocation';
import { INLINE_WAIT, pathParts, type EngineTask, type PathParts, type InvocationContext, type InvocationOutcome, type RecordPath } from './run-scope';

export type { EngineTask, InvocationContext, InvocationOutcome, RecordPath, RunScope } from './run-scope';
export { LEASE_SLACK_MS, type EngineParts } from './invocation';

/**
 * The engine shared by the source records and the retry copies: one instance per function (module scope),
 * `run` per invocation with the record path that fits the event; `round` per round of a suspend loop (`CopyWait`).
 *
 * @example
 * const engine = new Engine({ options, handler, store, telemetry });
 * const response = await engine.run(new SourcePath(), decoded.partitions, sink, context);
 */
export class Engine {
  readonly parts: EngineParts;
  readonly clock: Clock;
  /** The function's path parts, taken once: every invocation reads these. */
  readonly paths: PathParts;

  constructor(parts: EngineParts) {
    this.parts = parts;
    const clock = parts.clock ?? SYSTEM_CLOCK;
    this.clock = clock;
    this.paths = parts.paths ?? pathParts(parts.options, parts.telemetry.logger, () => clock.now());
  }

  async run<T extends EngineTask>(path: RecordPath<T>, partitions: readonly PartitionBatch[], sink: HandOffSink, context: InvocationContext): Promise<KafkaBatchResponse> {
    return (await new Invocation({ parts: this.parts, paths: this.paths, clock: this.clock, path, sink, context, copyWait: INLINE_WAIT }).run(partitions)).response;
  }

  round<T extends EngineTask>(path: RecordPath<T>, partitions: readonly PartitionBatch[], sink: HandOffSink, context: InvocationContext, untilMs: number): Promise<InvocationOutcome> {
    return new Invocation({ parts: this.parts, paths: this.paths, clock: this.clock, path, sink, context, copyWait: { kind: 'suspend', untilMs } }).run(partitions);
  }
}
