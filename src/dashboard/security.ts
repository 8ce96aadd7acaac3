import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The dashboard's guards, as pure checks on a request: an access token on every request (a random one in
 * the printed URL), a Host header naming this server (a page on another site that rebinds its DNS name to
 * 127.0.0.1 cannot read the API), and for actions a same-origin POST carrying the page's CSRF token.
 */

/** A random token, URL-safe, 32 bytes of entropy. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

function sameSecret(given: string, expected: string): boolean {
  // Hashing first gives equal lengths, so the comparison's time says nothing about the secret.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The token a request carries: `Authorization: Bearer <token>` (the page's calls) or `?token=` (the printed URL). */
export function tokenOf(request: Pick<IncomingMessage, 'headers'>, url: URL): string | undefined {
  const header = request.headers.authorization;
  if (header !== undefined && header.startsWith('Bearer ')) return header.slice('Bearer '.length);
  return url.searchParams.get('token') ?? undefined;
}

/** Whether the request carries the access token. */
export function hasAccess(request: Pick<IncomingMessage, 'headers'>, url: URL, token: string): boolean {
  const given = tokenOf(request, url);
  return given !== undefined && sameSecret(given, token);
}

/**
 * Whether the Host header names this server: any host when it listens on every interface (told to), else the
 * loopback names with its port.
 */
export function allowedHost(hostHeader: string | undefined, bound: { host: string; port: number }): boolean {
  if (hostHeader === undefined) return false;
  if (bound.host === '0.0.0.0' || bound.host === '::') return true;
  const names = new Set([bound.host, '127.0.0.1', 'localhost', '[::1]'].map((name) => `${name}:${bound.port}`));
  return names.has(hostHeader.toLowerCase());
}

/**
 * The CSRF check of an action: a POST whose Origin is this server's own (browsers always send it on a POST),
 * with a JSON body (a plain HTML form cannot send one) and the page's CSRF token in `X-CSRF-Token`.
 * Returns why it is refused, or `undefined` when it passes.
 */
export function csrfRefusal(request: Pick<IncomingMessage, 'headers'>, csrfToken: string): string | undefined {
  const { origin, host } = request.headers;
  if (origin === undefined || origin !== `http://${host ?? ''}`) return 'the request does not come from the dashboard page (Origin)';
  if (!(request.headers['content-type'] ?? '').startsWith('application/json')) return 'expected a JSON body (Content-Type: application/json)';
  const given = request.headers['x-csrf-token'];
  if (typeof given !== 'string' || !sameSecret(given, csrfToken)) return 'missing or wrong X-CSRF-Token';
  return undefined;
}

/** `text` with any credentials of a URL (`redis://user:password@host`) taken out: error messages reach the page. */
export function redactSecrets(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}
