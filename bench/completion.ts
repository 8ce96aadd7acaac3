/**
 * bench:completion — how fast the completion engine marks done bits, how many Redis round trips that
 * takes, and how much Redis memory a partition's window costs.
 *
 * Marks 1,000,000 offsets of one partition in batches of 1, 100 and 1,000 (batches of 1 keep 16 calls in
 * flight on one connection, as a processor with many handlers would). Round trips are counted by Redis
 * itself (INFO commandstats: evalsha + eval + sadd), not by the client. Then Redis's own time for one admit
 * and one mark call, with records of one key in order and of 1,000 keys finishing scattered: while a call runs,
 * every other call waits (a durable step's store among them).
 *
 *   npm run bench:completion            # needs Redis on 127.0.0.1:6379 (npm run local:up)
 *   OFFSETS=200000 npm run bench:completion
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { CompletionStore, partitionKeys } from '../src/completion';
import type { PartitionRef } from '../src/ports/partition';

const OFFSETS = Number(process.env.OFFSETS ?? 1_000_000);
const ADMIT_BATCH = 10_000;
const SCRIPT_BATCH = 2_000;
const SCRIPT_CALLS = Number(process.env.SCRIPT_CALLS ?? 30);

async function serverCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/cmdstat_(evalsha|eval|sadd):calls=(\d+)/g)) calls += Number(match[2]);
  return calls;
}

async function admitAll(store: CompletionStore, ref: PartitionRef, count: number): Promise<void> {
  for (let from = 0; from < count; from += ADMIT_BATCH) {
    const records = [];
    for (let o = from; o < Math.min(count, from + ADMIT_BATCH); o += 1) records.push({ offset: o });
    await store.admit(ref, records);
  }
}

async function markRun(redis: Redis, batch: number): Promise<Record<string, string | number>> {
  const store = new CompletionStore(redis, { maxWindow: OFFSETS + 1, maxParked: 1 });
  const ref = { group: `bench-${randomBytes(4).toString('hex')}`, topic: 'bench', partition: 0 };
  await admitAll(store, ref, OFFSETS);
  const before = await serverCalls(redis);
  const started = process.hrtime.bigint();
  if (batch === 1) {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < OFFSETS) {
        const offset = next;
        next += 1;
        await store.markDone(ref, [offset]);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  } else {
    for (let from = 0; from < OFFSETS; from += batch) {
      const offsets = [];
      for (let o = from; o < Math.min(OFFSETS, from + batch); o += 1) offsets.push(o);
      await store.markDone(ref, offsets);
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const calls = (await serverCalls(redis)) - before;
  const reading = await store.frontier(ref);
  if (reading?.frontier !== OFFSETS) throw new Error(`frontier ${reading?.frontier} after marking ${OFFSETS}`);
  await cleanup(redis, ref);
  return {
    'batch size': batch,
    offsets: OFFSETS,
    seconds: seconds.toFixed(2),
    'records/s': Math.round(OFFSETS / seconds),
    'round trips/record': (calls / OFFSETS).toFixed(4),
  };
}

async function memoryRun(redis: Redis): Promise<Record<string, string | number>> {
  const window = 1_000_000;
  const store = new CompletionStore(redis, { maxWindow: window + 1, maxParked: 1 });
  const ref = { group: `bench-${randomBytes(4).toString('hex')}`, topic: 'bench', partition: 0 };
  await admitAll(store, ref, window);
  // Everything done but the first offset: the frontier cannot move, so the whole window stays in Redis.
  for (let from = 1; from < window; from += 10_000) {
    const offsets = [];
    for (let o = from; o < Math.min(window, from + 10_000); o += 1) offsets.push(o);
    await store.markDone(ref, offsets);
  }
  await store.frontier(ref, { trim: true });
  const keys = partitionKeys(ref);
  let bytes = 0;
  for (const key of [keys.bits, keys.meta, keys.lanes]) bytes += (await redis.memory('USAGE', key)) ?? 0;
  await cleanup(redis, ref);
  return { 'window (offsets)': window, 'Redis bytes (bits+meta)': bytes, KB: (bytes / 1000).toFixed(1) };
}

/** Redis's own time in scripts so far (INFO commandstats), µs. */
async function scriptMicros(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let usec = 0;
  for (const match of info.matchAll(/cmdstat_(evalsha|eval):calls=\d+,usec=(\d+)/g)) usec += Number(match[2]);
  return usec;
}

/**
 * What one admit and one mark call of SCRIPT_BATCH records cost Redis (its own time, median of SCRIPT_CALLS calls):
 * records of one key and of 1,000 keys (admission reads the lanes of the batch), done bits in order and scattered
 * (records of many keys finish out of order: each offset lands up to 400 after its place).
 */
async function scriptCostRun(redis: Redis): Promise<Array<Record<string, string | number>>> {
  const store = new CompletionStore(redis, { maxWindow: 10_000_000, maxParked: 1 });
  const rows: Array<Record<string, string | number>> = [];
  for (const [keys, order] of [[1, 'in order'], [1_000, 'scattered']] as const) {
    const ref = { group: `bench-${randomBytes(4).toString('hex')}`, topic: 'bench', partition: 0 };
    const admits: number[] = [];
    const marks: number[] = [];
    for (let call = 0, offset = 0; call < SCRIPT_CALLS; call += 1) {
      const records = [];
      for (let i = 0; i < SCRIPT_BATCH; i += 1, offset += 1) records.push({ offset, lane: `k${offset % keys}` });
      let before = await scriptMicros(redis);
      await store.admit(ref, records);
      admits.push((await scriptMicros(redis)) - before);
      const done = records.map((record) => record.offset);
      if (order === 'scattered') {
        const place = new Map(done.map((o) => [o, o + Math.random() * 400]));
        done.sort((a, b) => place.get(a)! - place.get(b)!);
      }
      // Half of the batch in one call, as a flush finds it.
      const marked = done.slice(0, SCRIPT_BATCH / 2);
      before = await scriptMicros(redis);
      await store.markDone(ref, marked);
      marks.push((await scriptMicros(redis)) - before);
      await store.markDone(ref, done.slice(SCRIPT_BATCH / 2));
    }
    await cleanup(redis, ref);
    const median = (list: number[]): number => [...list].sort((a, b) => a - b)[list.length >> 1]!;
    rows.push({ call: `admit, ${keys.toLocaleString('en-US')} key(s)`, records: SCRIPT_BATCH, 'Redis µs/call': median(admits), 'Redis µs/record': (median(admits) / SCRIPT_BATCH).toFixed(2) });
    rows.push({ call: `mark, ${order}`, records: SCRIPT_BATCH / 2, 'Redis µs/call': median(marks), 'Redis µs/record': (median(marks) / (SCRIPT_BATCH / 2)).toFixed(2) });
  }
  return rows;
}

async function cleanup(redis: Redis, ref: PartitionRef): Promise<void> {
  const keys = partitionKeys(ref);
  await redis.del(keys.bits, keys.meta, keys.lanes);
}

async function main(): Promise<void> {
  const redis = new Redis('redis://127.0.0.1:6379');
  try {
    const rows = [];
    for (const batch of [1, 100, 1000]) rows.push(await markRun(redis, batch));
    console.log('\nMarking done bits (one partition)');
    console.table(rows);
    console.log('\nRedis memory per partition');
    console.table([await memoryRun(redis)]);
    console.log(`\nRedis's own time per script call (median of ${SCRIPT_CALLS})`);
    console.table(await scriptCostRun(redis));
  } finally {
    redis.disconnect();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
