/**
 * `npm run fuzz:histories [-- <runs> [<seed>] [--redis]]`: the randomized histories of the engine tests
 * (test/support/history-rig.ts) with many more cases: `<runs>` histories of each shape of `HISTORY_SHAPES`, on the
 * in-memory completion model, or with `--redis` on the real Redis store and committer (needs the local Redis,
 * `npm run local:up`), where the histories also hold `lose` steps: Redis loses its last writes, one key or every key
 * of the group, and the committer must find the loss and recover from the source log (the model has no loss checks),
 * plus the shapes of `LOSS_SHAPES` (the partition's first minute: a loss before any durable marker). Shape i runs with seed `<seed> + i`; a failure prints its seed, path, shrunk history and
 * trace, so it can be replayed with the same arguments.
 */
import { Redis } from 'ioredis';
import { REDIS_URL } from '../integration/support/stack';
import { runOnRedis } from '../support/history-redis';
import { addStats, assertHistories, HISTORY_SHAPES, LOSS_SHAPES, ModelBackend, NO_STATS, runHistory } from '../support/history-rig';

process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';

async function main(): Promise<void> {
  const [runsArg, seedArg] = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
  const onRedis = process.argv.includes('--redis');
  const runs = Number(runsArg ?? 2_000);
  const seed = Number(seedArg ?? Date.now() % 2 ** 31);
  if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed)) {
    throw new Error(`Expected <runs> (a positive integer) and <seed> (an integer), got ${String(runsArg)} and ${String(seedArg)}`);
  }
  const redis = onRedis ? new Redis(REDIS_URL, { maxRetriesPerRequest: 3 }) : undefined;
  console.log(`history fuzz: ${runs} histories of each of ${Object.keys(HISTORY_SHAPES).length + (onRedis ? Object.keys(LOSS_SHAPES).length : 0)} shapes on ${onRedis ? 'real Redis' : 'the in-memory model'}, seed ${seed}`);
  let total = NO_STATS;
  try {
    const shapes = onRedis ? { ...HISTORY_SHAPES, ...LOSS_SHAPES } : HISTORY_SHAPES;
    for (const [i, [name, shape]] of Object.entries(shapes).entries()) {
      const started = performance.now();
      const stats = await assertHistories({ shape: { ...shape, losses: onRedis }, runs, seed: seed + i }, (spec) =>
        redis === undefined ? runHistory(spec, new ModelBackend(spec.caps)) : runOnRedis(redis, spec));
      total = addStats(total, stats);
      console.log(`  ${name} (seed ${seed + i}): ${runs} passed in ${((performance.now() - started) / 1000).toFixed(1)} s, ${stats.crashes} crashes, ${stats.copyRuns} copy runs, ${stats.deadLetters} dead letters` +
        (onRedis ? `, ${stats.losses} losses (${stats.lossesUnmarked} before a first marker, ${stats.lossesHeld} of them with a lane held), ${stats.lossesHeldMarked} with a lane held after the first marker, ${stats.lanesLost} taking blocked lanes' entries, ${stats.lossesFound} found, ${stats.recoveries} recoveries (${stats.rewinds} moving the completion group back), ${stats.blindRuns} runs out of order before a loss was found` : ''));
    }
    console.log(`all passed: ${JSON.stringify(total)}`);
  } finally {
    await redis?.quit();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
