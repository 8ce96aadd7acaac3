import type Redis from 'ioredis';

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
