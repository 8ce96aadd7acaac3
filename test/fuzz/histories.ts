/**
 * `npm run fuzz:histories [-- <runs> [<seed>] [--redis] [--shape <part of a name>] [--path <path>] [--committer-period <ms>]]`: the randomized histories of the engine tests
 * (test/support/history-rig.ts) with many more cases: `<runs>` histories of each shape of `HISTORY_SHAPES`, on the
 * in-memory completion model, or with `--redis` on the real Redis store and committer (needs the local Redis,
 * `npm run local:up`), where the histories also hold `lose` steps: Redis loses its last writes, one key or every key
 * of the group, and the committer must find the loss and recover from the source log (the model has no loss checks),
 * plus the shapes of `LOSS_SHAPES` (the partition's first minute: a loss before any durable marker). Shape i runs with seed `<seed> + i`; a failure prints its seed, path, shrunk history and
 * trace, so it can be replayed with the same arguments; `--shape` plays only the shapes whose name holds the text
 * (each keeps its seed `<seed> + i`), `--path` replays the one history fast-check's report names (with `--shape`).
 * `--committer-period` plays the committer's schedule on the history's clock (default 60000, the plugin's
 * `rate(1 minute)`; 2000 is the schedule of `committerHandler` as the issue's deployment runs it): the recovery times
 * printed are measured against it. Each drain round also hands the tiers' copies over, so a shorter period writes
 * copies not due back more often (more copies per record) and takes longer (about 6 s a history at 2000).
 * `HISTORY_LOG_LEVEL=INFO` (or `DEBUG`) prints what the functions and the committer log while a replayed history runs.
 */
import { Redis } from 'ioredis';
import { REDIS_URL } from '../integration/support/stack';
import { runOnRedis } from '../support/history-redis';
import { addStats, assertHistories, HISTORY_SHAPES, LOSS_SHAPES, ModelBackend, NO_STATS, runHistory, type HistorySpec, type RecoveryTime } from '../support/history-rig';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string): string | undefined => {
    const at = args.indexOf(name);
    return at < 0 ? undefined : args[at + 1];
  };
  const shapeFilter = option('--shape');
  const path = option('--path');
  const [runsArg, seedArg] = args.filter((arg, i) => !arg.startsWith('--') && !['--shape', '--path', '--committer-period'].includes(args[i - 1] ?? ''));
  const periodArg = option('--committer-period');
  const committerPeriodMs = periodArg === undefined ? undefined : Number(periodArg);
  if (committerPeriodMs !== undefined && (!Number.isSafeInteger(committerPeriodMs) || committerPeriodMs < 1)) {
    throw new Error(`Expected --committer-period to be a positive integer (ms), got ${String(periodArg)}`);
  }
  const onRedis = args.includes('--redis');
  const runs = Number(runsArg ?? 2_000);
  const seed = Number(seedArg ?? Date.now() % 2 ** 31);
  if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed)) {
    throw new Error(`Expected <runs> (a positive integer) and <seed> (an integer), got ${String(runsArg)} and ${String(seedArg)}`);
  }
  if (path !== undefined && shapeFilter === undefined) throw new Error(`Expected --shape with --path ${path}, got no --shape`);
  const shapes = onRedis ? { ...HISTORY_SHAPES, ...LOSS_SHAPES } : HISTORY_SHAPES;
  const played = [...Object.entries(shapes).entries()].filter(([, [name]]) => shapeFilter === undefined || name.includes(shapeFilter));
  if (played.length === 0) throw new Error(`Expected --shape to name part of one of ${Object.keys(shapes).join('; ')}, got ${String(shapeFilter)}`);
  // Database 1, as test/integration/histories.test.ts: the backend finds a group's keys with a SCAN of the whole
  // database, and database 0 holds every other suite's keys (a million on a shared stack: minutes a shape).
  const redis = onRedis ? new Redis(REDIS_URL, { maxRetriesPerRequest: 3, db: 1 }) : undefined;
  console.log(`history fuzz: ${runs} histories of each of ${played.length} shapes on ${onRedis ? 'real Redis' : 'the in-memory model'}, seed ${seed}` +
    (committerPeriodMs === undefined ? '' : `, a committer run every ${committerPeriodMs} ms`));
  let total = NO_STATS;
  const allTimes: RecoveryTime[] = [];
  try {
    for (const [i, [name, shape]] of played) {
      const started = performance.now();
      const times: RecoveryTime[] = [];
      const stats = await assertHistories({ shape: { ...shape, losses: onRedis }, runs, seed: seed + i, path }, (spec) => watched(spec, () =>
        redis === undefined ? runHistory(spec, new ModelBackend(spec.caps), { committerPeriodMs }) : runOnRedis(redis, spec, { recoveryTimes: times, committerPeriodMs })));
      total = addStats(total, stats);
      console.log(`  ${name} (seed ${seed + i}): ${runs} passed in ${((performance.now() - started) / 1000).toFixed(1)} s, ${stats.crashes} crashes, ${stats.copyRuns} copy runs, ${stats.deadLetters} dead letters` +
        (onRedis ? `, ${stats.losses} losses (${stats.lossesUnmarked} before a first marker, ${stats.lossesHeld} of them with a lane held), ${stats.lossesHeldMarked} with a lane held after the first marker, ${stats.lanesLost} taking blocked lanes' entries, ${stats.lossesFound} found, ${stats.recoveries} recoveries (${stats.rewinds} moving the completion group back), ${stats.blindRuns} runs out of order before a loss was found` : ''));
      if (times.length > 0) console.log(`    ${recoveryFigures(times)}`);
      allTimes.push(...times);
    }
    if (allTimes.length > 0) console.log(`all shapes: ${recoveryFigures(allTimes)}`);
    console.log(`all passed: ${JSON.stringify(total)}`);
  } finally {
    await redis?.quit();
  }
}

/** A history taking longer than this (real time) is printed while it runs: a hang can then be replayed (with `runOnRedis` and the spec printed). */
const STALL_MS = 120_000;

/** Runs one history; one that takes longer than `STALL_MS` prints its spec (the run goes on). */
async function watched<T>(spec: HistorySpec, run: () => Promise<T>): Promise<T> {
  const timer = setTimeout(() => console.error(`a history has run for more than ${STALL_MS / 1000} s (a hang?): ${JSON.stringify(spec)}`), STALL_MS);
  try {
    return await run();
  } finally {
    clearTimeout(timer);
  }
}

/** Median, 95th percentile and maximum of the recoveries' times (history clock: a drain round moves it to the next copy due or lease expiring, at most a committer period of 60 s). */
function recoveryFigures(times: readonly RecoveryTime[]): string {
  const figures = (values: readonly number[], unit: (x: number) => string): string => {
    const sorted = [...values].sort((a, b) => a - b);
    const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return `median ${unit(at(0.5))}, p95 ${unit(at(0.95))}, max ${unit(sorted[sorted.length - 1]!)}`;
  };
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  return `${times.length} recoveries whose records all ran again: loss to last recovered record run again ${figures(times.map((t) => t.ranAgainMs), seconds)} ` +
    `(committer runs after the finding ${figures(times.map((t) => t.committerRuns), String)}); loss to last terminal again (retries included) ${figures(times.map((t) => t.sinceLossMs), seconds)}; ` +
    `found to last terminal ${figures(times.map((t) => t.sinceFoundMs), seconds)}`;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  // fast-check's report carries the history's own failure (what broke, and the trace) as its cause.
  const cause = (error as { cause?: unknown }).cause;
  if (cause !== undefined) console.error(cause instanceof Error ? cause.message : String(cause));
  process.exitCode = 1;
});
