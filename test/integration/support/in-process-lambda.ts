/**
 * serverless-offline's Lambda runtime, as far as the offline trigger uses it (`OfflineLambda`), played in this
 * process: each function key runs an async handler of the test. The trigger under test still consumes from the
 * real broker, in a real consumer group, and commits there; only the worker threads of serverless-offline are
 * left out (test/integration/serverless-offline.test.ts runs those).
 */
import type { OfflineLambda } from '../../../src/serverless/offline/trigger';

export type InProcessHandler = (event: unknown) => Promise<unknown>;

/**
 * @example
 * const lambda = inProcessLambda({ orders: async (event) => ({ batchItemFailures: [] }) });
 */
export function inProcessLambda(handlers: Readonly<Record<string, InProcessHandler>>): OfflineLambda {
  return {
    create: () => undefined,
    get(functionKey) {
      const handler = handlers[functionKey];
      if (handler === undefined) throw new Error(`no handler for function \`${functionKey}\``);
      let event: unknown;
      return {
        setEvent: (next) => {
          event = next;
        },
        runHandler: () => handler(event),
      };
    },
    cleanup: async () => undefined,
  };
}
