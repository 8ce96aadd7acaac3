import { createHash } from 'node:crypto';
import { APP_CSS, APP_JS } from './assets';

/**
 * The dashboard's one page: the bundled front end inlined into it, so the server has a single document to
 * serve and the browser fetches nothing but the JSON API. The Content-Security-Policy allows that one script
 * (by its hash) and requests to this server only.
 */
export function renderPage(): { html: string; headers: Record<string, string> } {
  // `</script` inside the bundle would end the element early.
  const script = APP_JS.replace(/<\/script/gi, '<\\/script');
  const hash = createHash('sha256').update(script).digest('base64');
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>kafka-lanes dashboard</title><meta name="referrer" content="no-referrer">' +
    `<style>${APP_CSS}</style></head><body><div id="app">loading…</div><script>${script}</script></body></html>`;
  return {
    html,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'content-security-policy':
        `default-src 'none'; script-src 'sha256-${hash}'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; ` +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    },
  };
}
