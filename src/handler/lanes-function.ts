import type { CompletionStore } from '../completion/store';
import type { HandOffSink } from '../ports/handoff';
import type { RecordHandler } from '../engine/types';
import type { LanesOptions } from '../options/lanes-options';
import type { Telemetry } from '../telemetry';
import { LanesCore } from './lanes-core';

export { BatchNotHandedOffError, DeadlineError, RecordTimeoutError } from '../errors';
export { quantiles } from '../engine/run-report';
export type { InvocationContext } from '../engine/run-scope';
export type { HandOffSink } from '../ports/handoff';
export type { LanesContext, LanesRecord, RecordHandler } from '../engine/types';

export interface LanesFunctionParts {
  readonly options: LanesOptions;
  readonly handler: RecordHandler;
  /** The completion store on the function's Redis connection (`connectStore`); the effects store shares it. */
  readonly store: CompletionStore;
  /** The hand-off writer for an event's brokers (`options.kafka.brokers` win when set). */
  readonly handOff: (bootstrapServers: readonly string[]) => HandOffSink;
  readonly telemetry: Telemetry;
  readonly now?: () => number;
}

/**
 * The Lambda function `lanes()` builds (`LanesCore`), on Redis: the completion store and the effects store of its
 * client. One instance per function (module scope), `process` per invocation.
 *
 * @example
 * const fn = new LanesFunction({ options, handler, store: await connectStore(options, telemetry), handOff, telemetry });
 * export const main = (event: unknown, context: Context) => fn.process(event, context);
 */
export class LanesFunction extends LanesCore {
  readonly parts: LanesFunctionParts;
  readonly store: CompletionStore;

  constructor(parts: LanesFunctionParts) {
    super({ ...parts, effects: parts.store.effects() });
    this.parts = parts;
    this.store = parts.store;
  }
}
