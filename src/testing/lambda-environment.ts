/**
 * The variable Lambda's runtime sets in an on-demand execution environment. Powertools reads it when a Logger (or
 * Metrics) is made, and reports a cold start (`cold_start: true` once, at the first `injectLambdaContext`) only under
 * it: without it, a handler's own Logger under test says `cold_start: false` from its first invocation on.
 */
export const INITIALIZATION_TYPE = 'AWS_LAMBDA_INITIALIZATION_TYPE';

/**
 * Sets `AWS_LAMBDA_INITIALIZATION_TYPE=on-demand` where it is unset, as Lambda does before the handler's module loads.
 * `kafka-lanes/testing` calls it when it is imported, so a test that imports it before the handler's module gets a
 * Logger that says `cold_start: true` at the first invocation and `false` after, as on Lambda.
 *
 * @example
 * asOnDemandEnvironment(process.env); // process.env.AWS_LAMBDA_INITIALIZATION_TYPE === 'on-demand'
 */
export function asOnDemandEnvironment(env: NodeJS.ProcessEnv): void {
  if ((env[INITIALIZATION_TYPE] ?? '') === '') env[INITIALIZATION_TYPE] = 'on-demand';
}
