import { allowedHost, csrfRefusal, hasAccess, randomToken, redactSecrets } from '../../../src/dashboard';

const request = (headers: Record<string, string>) => ({ headers });

describe('dashboard access token', () => {
  const token = randomToken();

  it('is random and URL-safe', () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomToken()).not.toBe(token);
  });

  it('is accepted in the query or as a bearer header, and nothing else is', () => {
    expect(hasAccess(request({}), new URL(`http://h/?token=${token}`), token)).toBe(true);
    expect(hasAccess(request({ authorization: `Bearer ${token}` }), new URL('http://h/api/status'), token)).toBe(true);
    expect(hasAccess(request({}), new URL('http://h/'), token)).toBe(false);
    expect(hasAccess(request({}), new URL(`http://h/?token=${token.slice(1)}`), token)).toBe(false);
    expect(hasAccess(request({ authorization: `Basic ${token}` }), new URL('http://h/'), token)).toBe(false);
  });
});

describe('dashboard Host check', () => {
  it('accepts the loopback names with the port when bound to 127.0.0.1', () => {
    const bound = { host: '127.0.0.1', port: 8080 };
    expect(allowedHost('127.0.0.1:8080', bound)).toBe(true);
    expect(allowedHost('localhost:8080', bound)).toBe(true);
    expect(allowedHost('attacker.example:8080', bound)).toBe(false);
    expect(allowedHost('127.0.0.1:9090', bound)).toBe(false);
    expect(allowedHost(undefined, bound)).toBe(false);
  });

  it('accepts any Host when told to listen on every interface', () => {
    expect(allowedHost('dashboard.internal:8080', { host: '0.0.0.0', port: 8080 })).toBe(true);
  });
});

describe('dashboard CSRF check', () => {
  const csrf = randomToken();
  const good = { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080', 'content-type': 'application/json', 'x-csrf-token': csrf };

  it('passes a same-origin JSON POST with the CSRF token', () => {
    expect(csrfRefusal(request(good), csrf)).toBeUndefined();
  });

  it.each([
    [{ ...good, origin: 'http://attacker.example' }, /Origin/],
    [{ host: good.host, 'content-type': good['content-type'], 'x-csrf-token': csrf }, /Origin/],
    [{ ...good, 'content-type': 'application/x-www-form-urlencoded' }, /JSON body/],
    [{ ...good, 'x-csrf-token': 'guess' }, /X-CSRF-Token/],
  ])('refuses %j', (headers, reason) => {
    expect(csrfRefusal(request(headers as Record<string, string>), csrf)).toMatch(reason);
  });
});

describe('redactSecrets', () => {
  it('takes the credentials out of URLs in a message', () => {
    expect(redactSecrets('connect failed: rediss://default:s3cret@cache.example:6379')).toBe('connect failed: rediss://***@cache.example:6379');
    expect(redactSecrets('no url here')).toBe('no url here');
  });
});
