/**
 * Randomized histories of one group, checked against the guarantees of docs/ARCHITECTURE.md (see
 * ./history/history.ts). This file is the rig's entry: it names what the tests and `npm run fuzz:histories` use.
 * The rig itself lives under ./history/, one file per concern:
 * - spec.ts: what a history is (steps, faults, planned failures); shapes.ts: the random histories and their shapes;
 *   examples.ts: hand-written histories (regressions, examples run first);
 * - backend.ts: the ports a history runs against; model-backend.ts: the in-memory model's backend (the Redis one is
 *   ./history-redis.ts); container.ts: one Lambda execution environment and its death;
 * - runtime.ts: options, timings and the ghost's record of a run; stats.ts: stats, recovery times, the property;
 * - state.ts, losses.ts, runs.ts, drain.ts, history.ts: the runner, layer on layer (the ghost's state; losses,
 *   committer runs and re-drives; invocations and the handler; the drain and the paced clock; the steps and the
 *   final checks).
 */
export * from './history/spec';
export * from './history/shapes';
export * from './history/examples';
export * from './history/backend';
export * from './history/model-backend';
export { ContainerGone } from './history/container';
export { historyOptions, HistoryViolation } from './history/runtime';
export * from './history/stats';
export { runHistory } from './history/history';
