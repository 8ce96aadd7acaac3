import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import type { ScriptCall } from './args';
import { deadlineSignal, untilAborted } from '../engine/deadline';
import { RedisCallAbortedError } from './errors';

/** A Redis connection: one server or a cluster (every script touches one hash slot). */
export type RedisClient = Redis | Cluster;

/**
 * Bumped whenever any script changes. Scripts are registered under versioned names so two versions of the
 * framework sharing one Redis (a rolling deploy) never run each other's code.
 */
export const SCRIPTS_VERSION = 1;

/** One Lua file per script, named `<name>-<fixed key count>.lua` (BullMQ's convention). */
const FILES = {
  admit: 'admit-3.lua',
  mark: 'mark-2.lua',
  frontier: 'frontier-2.lua',
  block: 'block-4.lua',
  release: 'release-4.lua',
  advance: 'advance-3.lua',
} as const;
export type ScriptName = keyof typeof FILES;

const sources = new Map<ScriptName, string>();

function source(name: ScriptName): string {
  let lua = sources.get(name);
  if (lua === undefined) {
    lua = readFileSync(join(__dirname, 'scripts', FILES[name]), 'utf8');
    sources.set(name, lua);
  }
  return lua;
}

function commandName(name: ScriptName): string {
  return `kl_${name}_v${SCRIPTS_VERSION}`;
}

type ScriptCommand = (numKeys: number, ...args: Array<string | Buffer>) => Promise<unknown>;

const defined = new WeakSet<RedisClient>();

/** Registers every script on a connection once (EVALSHA with a fallback to EVAL, done by ioredis). */
export function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const name of Object.keys(FILES) as ScriptName[]) {
    redis.defineCommand(commandName(name), { lua: source(name) });
  }
  defined.add(redis);
}

/** Bounds on one Redis call: it is given up (rejected) after `timeoutMs`, or when `signal` aborts. */
export interface CallLimits {
  readonly timeoutMs?: number | undefined;
  readonly signal?: AbortSignal | undefined;
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
  const limit = deadlineSignal(timeoutMs, signal);
  return untilAborted(work, limit, () =>
    new RedisCallAbortedError(
      signal?.aborted === true ? `${what}: given up, the invocation's deadline is near` : `${what}: no answer from Redis within ${timeoutMs} ms`,
    ),
  );
}
