/** One row of `kafka-lanes doctor`: what was checked, how it stands, and what was seen. */

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface Check {
  readonly name: string;
  readonly status: CheckStatus;
  readonly detail: string;
}
