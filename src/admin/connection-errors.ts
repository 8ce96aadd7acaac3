/**
 * What a failed connection was, in words an operator acts on. ioredis reports a refused port to the command that
 * waited for it as `Connection is closed.` (the socket error goes to its `error` event); kafkajs as
 * `Connection error: connect ECONNREFUSED host:port`. The socket's own error says what happened.
 */
import { messageOf } from '../describe';

const SOCKET_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'host not found (DNS did not answer)',
  ETIMEDOUT: 'connection timed out (a firewall or security group, or the wrong host?)',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset by the server (TLS expected, or a wrong port?)',
};

/** ioredis's words for a command that found no connection. */
const CONNECTION_LOST = /Connection is closed|Stream isn't writeable|max retries per request|ClusterAllFailedError|Failed to refresh slots cache|None of startup nodes is available/i;

/**
 * `connection refused (nothing listens there) at 127.0.0.1:6390` for a socket error, in the error or its cause, or
 * in the message kafkajs builds from it; otherwise the error's own message.
 *
 * @example
 * describeConnectionError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6390'), { code: 'ECONNREFUSED', address: '127.0.0.1', port: 6390 }));
 * // 'connection refused (nothing listens there) at 127.0.0.1:6390'
 */
export function describeConnectionError(error: unknown): string {
  // Duck-typed: a socket error may come from another realm (a test runner's sandbox), where `instanceof Error` fails.
  for (let current: unknown = error, depth = 0; isError(current) && depth < 5; current = current.cause, depth += 1) {
    const socket = current as Error & { code?: unknown; address?: unknown; port?: unknown };
    const code = [typeof socket.code === 'string' ? socket.code : undefined, /\b(E[A-Z_]{3,})\b/.exec(socket.message)?.[1]].find(
      (candidate) => candidate !== undefined && SOCKET_ERRORS[candidate] !== undefined,
    );
    const words = code === undefined ? undefined : SOCKET_ERRORS[code];
    if (words === undefined) continue;
    const where = typeof socket.address === 'string' && socket.code === code ? `${socket.address}${typeof socket.port === 'number' ? `:${socket.port}` : ''}` : new RegExp(`${code} (\\S+)`).exec(socket.message)?.[1];
    return `${words}${where === undefined ? '' : ` at ${where}`}`;
  }
  return messageOf(error);
}

function isError(value: unknown): value is Error {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

/**
 * Follows a client's `error` events (which also keeps ioredis from printing them), so a command's vaguer error can
 * be explained by the socket error that caused it.
 *
 * @example
 * const watch = watchConnection(redis);
 * try { await redis.ping(); } catch (error) { throw new Error(`Redis: ${watch.explain(error)}`); }
 */
export function watchConnection(client: { on(event: 'error', listener: (error: Error) => void): unknown }): { explain(error: unknown): string } {
  let last: Error | undefined;
  client.on('error', (error: Error) => {
    last = error;
  });
  return {
    explain(error) {
      const direct = describeConnectionError(error);
      const message = messageOf(error);
      // Only an error that is about the connection itself is explained by the socket's; any other stays as it is.
      if (direct !== message || last === undefined || !CONNECTION_LOST.test(message)) return direct;
      const socket = describeConnectionError(last);
      return socket === last.message ? direct : socket;
    },
  };
}
