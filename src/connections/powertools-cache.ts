/**
 * Powertools Idempotency on the group's Redis: `@aws-lambda-powertools/idempotency`'s cache persistence layer takes
 * a client with `get`, `set` and `del` in the shape of `@redis/client` or `@valkey/valkey-glide`; this adapts an
 * ioredis connection (one server or a cluster, as `lanes()` uses) to it, so users of Powertools keep their
 * `makeIdempotent` code and key it by `ctx.idempotencyKey`.
 */
import type { Cluster, Redis } from 'ioredis';

/** The options Powertools passes to `set`, in both shapes it supports. */
export interface CacheSetOptions {
  readonly EX?: number;
  readonly NX?: boolean;
  readonly XX?: boolean;
  readonly conditionalSet?: 'onlyIfExists' | 'onlyIfDoesNotExist' | 'onlyIfEqual';
  readonly expiry?: 'keepExisting' | { readonly type: string; readonly count: number };
}

/** What Powertools' `CachePersistenceLayer` calls on its `client`. */
export interface IdempotencyCacheClient {
  get(name: string): Promise<string | null>;
  set(name: string | Uint8Array, value: unknown, options?: CacheSetOptions): Promise<string | null>;
  del(keys: string[]): Promise<number>;
}

/**
 * An ioredis connection as the `client` of Powertools' `CachePersistenceLayer`.
 *
 * @example
 * import { makeIdempotent, IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
 * import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
 * const persistenceStore = new CachePersistenceLayer({ client: idempotencyCacheClient(new Redis(process.env.KAFKA_LANES_REDIS_URL!)) });
 * const chargeOnce = makeIdempotent(async (request: { key: string; amount: number }) => psp.charge(request.amount), {
 *   persistenceStore, config: new IdempotencyConfig({ eventKeyJmesPath: 'key' }),
 * });
 * export const handler = lanes({ group: 'payments' }, async (record, ctx) => {
 *   await chargeOnce({ key: ctx.idempotencyKey, amount: record.value.amount });
 * });
 */
export function idempotencyCacheClient(redis: Redis | Cluster): IdempotencyCacheClient {
  return {
    get: (name) => redis.get(name),
    set: async (name, value, options = {}) => {
      const args: Array<string | number> = [];
      const expiry = typeof options.expiry === 'object' ? options.expiry : undefined;
      if (options.EX !== undefined) args.push('EX', options.EX);
      else if (expiry !== undefined) args.push(expiry.type, expiry.count);
      else if (options.expiry === 'keepExisting') args.push('KEEPTTL');
      if (options.NX === true || options.conditionalSet === 'onlyIfDoesNotExist') args.push('NX');
      else if (options.XX === true || options.conditionalSet === 'onlyIfExists') args.push('XX');
      const key = typeof name === 'string' ? name : Buffer.from(name);
      const text = typeof value === 'string' || Buffer.isBuffer(value) ? value : JSON.stringify(value);
      return (redis as Redis).call('SET', key, text, ...args) as Promise<string | null>;
    },
    // One key at a time: keys of several slots in one DEL are refused by a cluster.
    del: async (keys) => (await Promise.all(keys.map((key) => redis.del(key)))).reduce((a, b) => a + b, 0),
  };
}
