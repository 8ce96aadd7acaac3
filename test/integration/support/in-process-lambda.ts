/**
 * serverless-offline's Lambda runtime, as far as the offline trigger uses it (`OfflineLambda`), played in this
 * process: each function key runs an async handler of the test. The trigger under test still consumes from the
 * real broker, in a real consumer group, and commits there; only the worker threads of serverless-offline are
 * left out (test/integration/serverless-offline.test.ts runs those).
 */
import type { Context } from 'aws-lambda';
import type { OfflineLambda } from '../../../src/serverless/offline/trigger';

/** A function of the test: the event, and the client context the trigger gave the invocation (`null` for none). */
export type InProcessHandler = (event: unknown, clientContext: unknown) => Promise<unknown>;

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
      let clientContext: unknown = null;
      return {
        setEvent: (next) => {
          event = next;
        },
        setClientContext: (next) => {
          clientContext = next;
        },
        runHandler: () => handler(event, clientContext),
      };
    },
    cleanup: async () => undefined,
  };
}

/**
 * A `lanes()` handler as a function of the test: each invocation gets a Lambda context with `timeoutMs` to run and
 * the client context the trigger set, as serverless-offline's runtime gives them.
 *
 * @example
 * const lambda = inProcessLambda({ orders: lanesFunction(handler, 60_000) });
 */
export function lanesFunction(handler: (event: never, context: Context) => Promise<unknown>, timeoutMs: number): InProcessHandler {
  let requests = 0;
  return (event, clientContext) => {
    const deadline = Date.now() + timeoutMs;
    requests += 1;
    const context = { getRemainingTimeInMillis: () => deadline - Date.now(), awsRequestId: `in-process-${requests}`, clientContext: clientContext ?? undefined };
    return handler(event as never, context as unknown as Context);
  };
}
