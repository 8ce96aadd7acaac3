import type { CallLimits } from '../ports/limits';
import type { Cluster, Redis } from 'ioredis';
import type { ScriptCall } from './args';
import { withinDeadline } from '../deadline';
import { RedisCallAbortedError } from './errors';
import * as lua from './scripts/lua';

/** A Redis connection: one server or a cluster (every script touches one hash slot). */
export type RedisClient = Redis | Cluster;

/**
 * Bumped whenever any script's behaviour changes. Scripts are registered under versioned names so two
 * versions of the framework sharing one Redis (a rolling deploy) never run each other's code. A change of
 * text alone (comments, a definition moved into `scripts/lib/`) needs no bump: Redis keys a script by its
 * SHA, so old and new texts load side by side, and they do the same thing.
 */
export const SCRIPTS_VERSION = 13;

/**
 * The one registry of every Redis script of the framework, completion and committer alike. The `.lua`
 * files (one per script, `<name>-<fixed key count>.lua`, BullMQ's convention) are the source of truth;
 * `npm run build:scripts` turns them into the modules imported here, so the scripts are part of the module
 * graph and travel inside a bundle. Adding a script: its `.lua` file, `npm run build:scripts`, one line here.
 */
const SCRIPTS = {
  admit: lua.admit3,
  mark: lua.mark2,
  frontier: lua.frontier2,
  block: lua.block4,
  release: lua.release4,
  advance: lua.advance3,
  claim: lua.claim1,
  saveSteps: lua.saveSteps1,
  loadSteps: lua.loadSteps1,
  claimOutputs: lua.claimOutputs0,
  claimCopy: lua.claimCopy1,
  extendLease: lua.extendLease1,
  releaseLease: lua.releaseLease1,
  audit: lua.audit2,
  reportLoss: lua.reportLoss1,
  stampGeneration: lua.stampGeneration1,
  setMarked: lua.setMarked1,
  rebuildFence: lua.rebuildFence1,
  rebuildBegin: lua.rebuildBegin3,
  rebuildRecords: lua.rebuildRecords3,
  rebuildEnd: lua.rebuildEnd1,
} as const satisfies Record<string, string>;
export type ScriptName = keyof typeof SCRIPTS;

/** Every registered script and its Lua source, e.g. to check that each `.lua` file is registered. */
export const scriptSources: Readonly<Record<ScriptName, string>> = SCRIPTS;

/** The name a script is registered under on a connection: `kl_<name>_v<SCRIPTS_VERSION>`. */
export function commandName(name: ScriptName): string {
  return `kl_${name}_v${SCRIPTS_VERSION}`;
}

type ScriptCommand = (numKeys: number, ...args: Array<string | Buffer>) => Promise<unknown>;

const defined = new WeakSet<RedisClient>();

/** Registers every script on a connection once (EVALSHA with a fallback to EVAL, done by ioredis). */
export function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const [name, source] of Object.entries(SCRIPTS) as Array<[ScriptName, string]>) {
    redis.defineCommand(commandName(name), { lua: source });
  }
  defined.add(redis);
}

/** Runs one script call: the thin I/O half of the pure builders in `args.ts`. */
export function runScript(redis: RedisClient, name: ScriptName, call: ScriptCall, limits: CallLimits = {}): Promise<unknown> {
  defineScripts(redis);
  const command = (redis as unknown as Record<string, ScriptCommand>)[commandName(name)];
  if (command === undefined) throw new Error(`script ${name} is not defined`);
  return bounded(command.call(redis, call.keys.length, ...call.keys, ...call.argv), `script ${name}`, limits);
}

/**
 * Gives a Redis call up after its time or when its signal aborts. ioredis' own `commandTimeout` does not
 * cover a command waiting in Redis Cluster's offline queue (a cluster not ready, after a Lambda freeze),
 * so the bound is kept here. A call given up may still run later: every script is safe to repeat.
 */
export function bounded<T>(work: Promise<T>, what: string, { timeoutMs, signal }: CallLimits): Promise<T> {
  if (timeoutMs === undefined && signal === undefined) return work;
  return withinDeadline(work, timeoutMs, signal, (timedOut) =>
    new RedisCallAbortedError(timedOut ? `${what}: no answer from Redis within ${timeoutMs} ms` : `${what}: given up, the invocation's deadline is near`),
  );
}
