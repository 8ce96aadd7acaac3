import { describeConnectionError, watchConnection } from '../../../src/admin/connection-errors';

const socketError = (code: string, message: string, address?: string, port?: number): Error =>
  Object.assign(new Error(message), { code, ...(address === undefined ? {} : { address, port }) });

describe('describeConnectionError', () => {
  it.each([
    [socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6390', '127.0.0.1', 6390), 'connection refused (nothing listens there) at 127.0.0.1:6390'],
    // kafkajs folds the socket error into its own message.
    [new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9093'), 'connection refused (nothing listens there) at 127.0.0.1:9093'],
    [new Error('x', { cause: socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND b-1.example', 'b-1.example') }), 'host not found (DNS) at b-1.example'],
    [new Error('Connection is closed.'), 'Connection is closed.'],
    ['plain', 'plain'],
  ])('%p reads %p', (error, words) => {
    expect(describeConnectionError(error)).toBe(words);
  });
});

describe('watchConnection', () => {
  function client(): { on(event: 'error', listener: (error: Error) => void): void; emit(error: Error): void } {
    let listener: ((error: Error) => void) | undefined;
    return { on: (_event, fn) => (listener = fn), emit: (error) => listener?.(error) };
  }

  it("explains ioredis's `Connection is closed.` by the socket error it saw", () => {
    const redis = client();
    const watch = watchConnection(redis);
    redis.emit(socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6390', '127.0.0.1', 6390));
    expect(watch.explain(new Error('Connection is closed.'))).toBe('connection refused (nothing listens there) at 127.0.0.1:6390');
  });

  it('leaves an error that is not about the connection as it is', () => {
    const redis = client();
    const watch = watchConnection(redis);
    redis.emit(socketError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6390', '127.0.0.1', 6390));
    expect(watch.explain(new Error('NOPERM this user has no permissions'))).toBe('NOPERM this user has no permissions');
  });
});
