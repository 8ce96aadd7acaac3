/** How long a port's call may take: given up after `timeoutMs` or when `signal` aborts. */
export interface CallLimits {
  readonly timeoutMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
}
