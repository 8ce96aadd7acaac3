import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { findSourceMap, type SourceMap } from 'node:module';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Redis from 'ioredis';

/**
 * The memory of the function a benchmark plays (MB): `LAMBDA_MEMORY_MB`, by default 1,024 (the example's
 * `memorySize` in serverless.yml, and the Serverless Framework's default). `0` runs node with its own defaults.
 */
const LAMBDA_MEMORY_MB = Number(process.env.LAMBDA_MEMORY_MB ?? 1024);
const ON_LAMBDA = 'KAFKA_LANES_BENCH_HEAP';

/**
 * The V8 heap flags Lambda's Node.js runtime starts a function's node with, for its memory: a semi-space of a
 * twentieth of the memory (the young generation a tenth) and the rest as old space. Node's own default semi-space is
 * at most 16 MB, a fifth of what a 1,024 MB function gets, and it scavenges three times as often.
 */
export function lambdaHeapFlags(memoryMb: number): string {
  const newSpace = Math.floor(memoryMb / 10);
  return `--max-semi-space-size=${Math.floor(newSpace / 2)} --max-old-space-size=${memoryMb - newSpace}`;
}

/** Whether this process runs with the heap of the function it plays (or `LAMBDA_MEMORY_MB=0` asks for node's). */
function runsAsOnLambda(): boolean {
  return !(LAMBDA_MEMORY_MB > 0) || process.env[ON_LAMBDA] === lambdaHeapFlags(LAMBDA_MEMORY_MB);
}

/** Runs this script again in a child process with the heap flags of a deployed function; its exit code. */
function relaunchAsOnLambda(): number {
  const flags = lambdaHeapFlags(LAMBDA_MEMORY_MB);
  const nodeOptions = [process.env.NODE_OPTIONS ?? '', flags].filter((part) => part !== '').join(' ');
  console.log(`node with the heap of a ${LAMBDA_MEMORY_MB} MB Lambda function (${flags}; LAMBDA_MEMORY_MB=0: node's defaults)`);
  const child = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_OPTIONS: nodeOptions, [ON_LAMBDA]: flags },
  });
  return child.status ?? 1;
}

/**
 * Runs a benchmark's `main` with the heap a deployed function has (`lambdaHeapFlags`): unless this process runs so
 * already, the script runs again in a child process with those flags and this one exits with its code. Exits 0 when
 * `main` settles, 1 (the error printed) when it throws.
 *
 * @example
 * runBenchmark(main);
 */
export function runBenchmark(main: () => Promise<void>): void {
  if (!runsAsOnLambda()) process.exit(relaunchAsOnLambda());
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}

/**
 * Counts the commands this client sends (every script call and every plain command is one).
 *
 * @example
 * const commands = countCommands(redis); // ... run ...; commands.count / records
 */
export function countCommands(redis: Redis): { readonly count: number } {
  const counter = { count: 0 };
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    counter.count += 1;
    return send(...args);
  }) as Redis['sendCommand'];
  return counter;
}

/** The p-th percentile of ascending values (NaN when there are none). */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** The median of values in any order: the mean of the two middle ones for an even count (NaN when there are none). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)] ?? Number.NaN;
}

/**
 * Wall time and process CPU time (user + system, every thread of the process: `process.cpuUsage()`) from now
 * until `stop()`.
 *
 * @example
 * const clock = startClock(); await work(); const { seconds, cpuMicros } = clock.stop();
 */
export function startClock(): { stop(): { seconds: number; cpuMicros: number } } {
  const cpu = process.cpuUsage();
  const started = performance.now();
  return {
    stop() {
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      return { seconds, cpuMicros: used.user + used.system };
    },
  };
}

/** A V8 CPU profile, as `Profiler.stop` returns it and as Chrome DevTools / VS Code open it (`.cpuprofile`). */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number; scriptId: string };
    hitCount?: number;
    children?: number[];
    positionTicks?: Array<{ line: number; ticks: number }>;
  }>;
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Runs `work` inside a V8 CPU profile of this process (node:inspector, sampling every `intervalMicros`).
 *
 * @example
 * const { profile } = await profiled(100, () => runTheLoop());
 */
export async function profiled<T>(intervalMicros: number, work: () => Promise<T>): Promise<{ result: T; profile: CpuProfile }> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}): Promise<unknown> =>
    new Promise((resolve, reject) => session.post(method, params, (error, result) => (error === null ? resolve(result) : reject(error))));
  try {
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: intervalMicros });
    await post('Profiler.start');
    const result = await work();
    const { profile } = (await post('Profiler.stop')) as { profile: CpuProfile };
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

/** A V8 sampling heap profile (`HeapProfiler.stopSampling`): a tree of allocation sites with their sampled bytes. */
interface HeapProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: HeapProfileNode[];
}

/**
 * Runs `work` inside a sampling heap profile that keeps what garbage collection freed too (every allocation, not only
 * what is left), and returns it with `work`'s result: the bytes the record path allocates, a figure steadier than
 * CPU time on a loaded machine.
 *
 * @example
 * const { result, profile } = await heapProfiled(() => runTheLoop());
 */
export async function heapProfiled<T>(work: () => Promise<T>): Promise<{ result: T; profile: HeapProfileNode }> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}): Promise<unknown> =>
    new Promise((resolve, reject) => session.post(method, params, (error, result) => (error === null ? resolve(result) : reject(error))));
  try {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    const result = await work();
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: { head: HeapProfileNode } };
    return { result, profile: profile.head };
  } finally {
    session.disconnect();
  }
}

/**
 * Prints the bytes allocated per record: in all, by room of the record path (`roomOf`), and the top allocation sites
 * (functions, with the `src/` or bench function they were called from).
 */
export function printHeapProfile(head: HeapProfileNode, root: string, records: number, top = 20): void {
  const toSource = sourceMapper();
  const rooms = new Map<string, number>();
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapProfileNode, stack: Array<HeapProfileNode['callFrame']>): void => {
    toSource(node.callFrame);
    const frames = [node.callFrame, ...stack];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const room = roomOf(frames);
      rooms.set(room, (rooms.get(room) ?? 0) + node.selfSize);
      const own = frames.find((frame) => /\/(src|bench|\.bench-interleave)\//.test(pathOf(frame.url)));
      const where = (frame: HeapProfileNode['callFrame'] | undefined): string =>
        frame === undefined ? '' : `${frame.functionName || '(anonymous)'} ${relative(root, pathOf(frame.url))}:${frame.lineNumber + 1}`;
      const site = own === node.callFrame ? where(node.callFrame) : `${node.callFrame.functionName || '(native)'} <- ${where(own)}`;
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, frames);
  };
  walk(head, []);
  const perRecord = (bytes: number): string => `${(bytes / records).toFixed(0).padStart(6)} B/record`;
  console.log(`\nallocated while the loop ran (sampled every 1 KiB, freed objects included): ${perRecord(total)}`);
  for (const [room, bytes] of [...rooms].sort((a, b) => b[1] - a[1])) console.log(`  ${room.padEnd(58)} ${perRecord(bytes)}`);
  console.log(`\ntop ${top} allocation sites`);
  for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${perRecord(bytes)}  ${site}`);
}

const pathOf = (url: string): string => (url.startsWith('file://') ? fileURLToPath(url) : url);

/**
 * Moves the profile's positions from the code tsx runs to the TypeScript sources (through the source maps tsx
 * registers), so `file:line` in the summary, DevTools and VS Code point at the lines one edits. Line-level ticks
 * of a mapped function are dropped: they count lines of the generated code.
 */
export function mapToSources(profile: CpuProfile): void {
  const toSource = sourceMapper();
  for (const node of profile.nodes) if (toSource(node.callFrame)) delete node.positionTicks;
}

/** Moves a frame's position to the TypeScript source (true when it did), through the source maps tsx registers. */
function sourceMapper(): (frame: { url: string; lineNumber: number; columnNumber: number }) => boolean {
  const maps = new Map<string, SourceMap | undefined>();
  return (frame) => {
    if (frame.url === '' || frame.url.startsWith('node:') || frame.lineNumber < 0) return false;
    if (!maps.has(frame.url)) maps.set(frame.url, findSourceMap(pathOf(frame.url)));
    const map = maps.get(frame.url);
    if (map === undefined) return false;
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    if (entry.originalLine === undefined || entry.originalSource === undefined) return false;
    frame.url = entry.originalSource;
    frame.lineNumber = entry.originalLine;
    frame.columnNumber = entry.originalColumn ?? 0;
    return true;
  };
}

/** Where a sampled function's code lives: the lines of the summary. */
function categoryOf(functionName: string, url: string, root: string): string {
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle (waiting: Redis, Kafka, timers)';
  if (functionName === '(program)' || functionName === '(root)') return 'program (native code outside JS)';
  if (url === '') return 'V8 builtins (no source)';
  if (url.startsWith('node:')) return 'node internals';
  const path = pathOf(url);
  const inPackage = /node_modules[/\\]((?:@[^/\\]+[/\\])?[^/\\]+)/.exec(path)?.[1];
  if (inPackage !== undefined) return inPackage.replace(/\\/g, '/');
  const own = relative(root, path).split(sep);
  if (own[0] === 'src') return own.length > 2 ? `src/${own[1]}` : `src/${own[1] ?? ''}`;
  if (own[0] === 'bench' || own[0] === 'test') return 'bench harness (handler, loop, events)';
  return 'other code';
}

export interface ProfileSummary {
  /** Sampled milliseconds in all, and idle among them. */
  readonly totalMs: number;
  readonly idleMs: number;
  /** Self time by category (garbage collection, src/<folder>, a package, node internals, idle...), largest first. */
  readonly categories: ReadonlyArray<readonly [string, number]>;
  /** Time with a src/<folder> anywhere on the stack (its own code and everything it calls), largest first. */
  readonly inclusive: ReadonlyArray<readonly [string, number]>;
  /**
   * Functions by self time, largest first: name, `file:line`, ms, and for code outside src/ the src/ line that
   * most of its time was called from (the nearest src/ frame below it on the stack).
   */
  readonly functions: ReadonlyArray<{ readonly name: string; readonly where: string; readonly ms: number; readonly calledFrom?: string }>;
  /** Busy time by room of the record path (`roomOf`), largest first. */
  readonly rooms: ReadonlyArray<readonly [string, number]>;
}

/**
 * The rooms of the record path a stack's time goes to, by file: the first frame from the top of the stack whose file
 * names a room decides (so a node or V8 function counts for the code that called it), and garbage collection is a room
 * of its own. In the order the docs' tables list them.
 */
const ROOMS: ReadonlyArray<readonly [string, RegExp]> = [
  ['decode (event → records)', /\/src\/event\//],
  ['deserialize (key and value for the handler)', /\/src\/options\/(deserialize|standard-schema)\.ts$/],
  ['admission (chunks, lanes, the admit call)', /\/src\/(source\/|lanes\/lane-id\.ts$|retry\/admit\.ts$)/],
  ['scheduler', /\/src\/engine\/scheduler\.ts$/],
  ['record deadlines', /\/src\/engine\/record-deadlines\.ts$/],
  ['done bits', /\/src\/engine\/done-bits\.ts$/],
  ['run path (engine, run scope, context, report)', /\/src\/(engine|handler)\//],
  ['hand-off (copies, writer)', /\/src\/(handoff|retry|lanes)\//],
  ['Redis (scripts, ioredis, its socket)', /\/src\/completion\/|node_modules\/(ioredis|redis-parser|@ioredis)\//],
  ['kafkajs (producer: encoding, socket)', /node_modules\/kafkajs\//],
  ["the benchmark's handler and loop", /\/(bench|\.bench-interleave|test)\//],
  ['timers (the handler\'s sleep and the promise turns after it)', /^node:internal\/timers$/],
];

function roomOf(frames: ReadonlyArray<{ functionName: string; url: string }>): string {
  const [leaf] = frames;
  if (leaf?.functionName === '(garbage collector)') return 'garbage collection';
  for (const { url } of frames) {
    const path = pathOf(url);
    for (const [room, pattern] of ROOMS) if (pattern.test(path)) return room;
  }
  return 'other (microtask queue, node, V8)';
}

/**
 * Self time of a profile by category and by function (a sample's time goes to the function on top of the stack),
 * and time by src/ folder anywhere on the stack. `root` is the repository: `src/...` paths are relative to it.
 */
export function summarizeProfile(profile: CpuProfile, root: string): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfMs = new Map<number, number>();
  // A sample lasts until the next one; the last one until the profile's end.
  let at = profile.startTime;
  const times = profile.timeDeltas.map((delta) => (at += delta));
  profile.samples.forEach((id, index) => {
    const ms = ((times[index + 1] ?? profile.endTime) - times[index]!) / 1000;
    selfMs.set(id, (selfMs.get(id) ?? 0) + ms);
  });
  const categories = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; ms: number; callers: Map<string, number> }>();
  const rooms = new Map<string, number>();
  const whereOf = (url: string, lineNumber: number): string => {
    const file = url === '' ? '' : url.startsWith('node:') ? url : relative(root, pathOf(url));
    return file === '' ? '(native)' : `${file}:${lineNumber + 1}`;
  };
  let totalMs = 0;
  let idleMs = 0;
  for (const [id, ms] of selfMs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const category = categoryOf(functionName, url, root);
    totalMs += ms;
    if (functionName === '(idle)') idleMs += ms;
    categories.set(category, (categories.get(category) ?? 0) + ms);
    const where = whereOf(url, lineNumber);
    const name = functionName === '' ? '(anonymous)' : functionName;
    const fn = functions.get(`${name} ${where}`) ?? { name, where, ms: 0, callers: new Map<string, number>() };
    fn.ms += ms;
    functions.set(`${name} ${where}`, fn);
    if (functionName !== '(idle)') {
      const frames: Array<{ functionName: string; url: string }> = [];
      for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) frames.push(byId.get(node)!.callFrame);
      const room = roomOf(frames);
      rooms.set(room, (rooms.get(room) ?? 0) + ms);
    }
    const onStack = new Set<string>();
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
      const frame = byId.get(node)!.callFrame;
      const part = categoryOf(frame.functionName, frame.url, root);
      if (!part.startsWith('src/')) continue;
      if (onStack.size === 0 && !category.startsWith('src/')) {
        const caller = `${frame.functionName || '(anonymous)'} ${whereOf(frame.url, frame.lineNumber)}`;
        fn.callers.set(caller, (fn.callers.get(caller) ?? 0) + ms);
      }
      onStack.add(part);
    }
    for (const part of onStack) inclusive.set(part, (inclusive.get(part) ?? 0) + ms);
  }
  const largest = <T>(entries: Iterable<T>, ms: (entry: T) => number): T[] => [...entries].sort((a, b) => ms(b) - ms(a));
  return {
    totalMs,
    idleMs,
    categories: largest(categories, ([, ms]) => ms),
    inclusive: largest(inclusive, ([, ms]) => ms),
    rooms: largest(rooms, ([, ms]) => ms),
    functions: largest(functions.values(), (fn) => fn.ms).map(({ name, where, ms, callers }) => {
      const calledFrom = largest(callers, ([, callerMs]) => callerMs)[0]?.[0];
      return calledFrom === undefined ? { name, where, ms } : { name, where, ms, calledFrom };
    }),
  };
}

/**
 * Maps a profile to the sources, writes it to a `.cpuprofile` file under the system's temporary folder (named from
 * `name`) and prints its summary: self time by category, time by src/ folder, the top functions.
 *
 * @example
 * printProfile(profile, ROOT, 'bench-steps-1-step', 100);
 */
export function printProfile(profile: CpuProfile, root: string, name: string, intervalMicros: number, top = 15): void {
  mapToSources(profile);
  const file = join(tmpdir(), `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));
  const summary = summarizeProfile(profile, root);
  const busy = summary.totalMs - summary.idleMs;
  const ms0 = (ms: number): string => ms.toFixed(0).padStart(6);
  const pct = (ms: number): string => `${((100 * ms) / busy).toFixed(1)} %`.padStart(8);
  console.log(`\nCPU profile (${intervalMicros} µs sampling, positions mapped to the .ts sources): ${file}`);
  console.log(`  ${summary.totalMs.toFixed(0)} ms sampled, ${busy.toFixed(0)} ms busy (on the CPU), ${summary.idleMs.toFixed(0)} ms idle`);
  console.log(`\nself time by category (the function on top of the stack)        ms  of busy`);
  for (const [category, ms] of summary.categories) console.log(`  ${category.padEnd(58)} ${ms0(ms)} ${category.startsWith('idle') ? '      -' : pct(ms)}`);
  console.log(`\ntime with a src/ folder anywhere on the stack (its code and all it calls)`);
  for (const [part, ms] of summary.inclusive) console.log(`  ${part.padEnd(58)} ${ms0(ms)} ${pct(ms)}`);
  console.log(`\nbusy time by room of the record path (the first frame from the top whose file names one)`);
  for (const [room, ms] of summary.rooms) console.log(`  ${room.padEnd(58)} ${ms0(ms)} ${pct(ms)}`);
  console.log(`\ntop ${top} functions by self time (outside src/: the src/ function most of it was called from)`);
  for (const fn of summary.functions.filter((f) => f.name !== '(idle)').slice(0, top)) {
    const from = fn.calledFrom === undefined ? '' : `  <- ${fn.calledFrom}`;
    console.log(`  ${ms0(fn.ms)} ms ${pct(fn.ms)}  ${fn.name.slice(0, 32).padEnd(32)} ${fn.where}${from}`);
  }
}
