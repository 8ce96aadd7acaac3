import { RedisCallAbortedError } from '../../../src/completion/errors';
import { bounded } from '../../../src/completion/scripts';

const never = new Promise<never>(() => undefined);

describe('bounded: a Redis call given up in time', () => {
  it('passes the answer through when it comes in time', async () => {
    await expect(bounded(Promise.resolve(7), 'call', { timeoutMs: 1_000 })).resolves.toBe(7);
  });

  it('passes an error through', async () => {
    await expect(bounded(Promise.reject(new Error('READONLY')), 'call', { timeoutMs: 1_000 })).rejects.toThrow('READONLY');
  });

  it('gives up after its time when no answer comes', async () => {
    await expect(bounded(never, 'script admit', { timeoutMs: 20 })).rejects.toThrow(new RedisCallAbortedError('script admit: no answer from Redis within 20 ms'));
  });

  it('gives up when its signal aborts, or at once when it already has', async () => {
    const controller = new AbortController();
    const pending = bounded(never, 'script mark', { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(RedisCallAbortedError);
    await expect(bounded(never, 'script mark', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(RedisCallAbortedError);
  });

  it('is the call itself when there are no limits', () => {
    const work = Promise.resolve(1);
    expect(bounded(work, 'call', {})).toBe(work);
  });
});
