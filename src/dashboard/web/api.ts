/**
 * The page's calls to its server. The access token comes from the page's own URL and goes in a header, never
 * into the page's markup; the CSRF token is asked for once and sent with every action.
 */
import type { GroupStatus, LanesPage } from '../../admin/status';
import type { DeadLetterRow } from '../dead-letters';
import type { HistorySeries } from '../history';

export interface Config {
  readonly group: string;
  readonly actions: boolean;
  readonly csrf: string;
  readonly readEveryMs: number;
}

export interface StatusReply {
  readonly status?: GroupStatus;
  readonly error?: string;
  readonly history: HistorySeries;
  readonly deadLettersPerMinute: Array<[number, number]>;
  readonly deadLettersSeen: number;
  readonly deadLetterError?: string;
}

export interface DeadLetterPage {
  readonly total: number;
  readonly rows: DeadLetterRow[];
  readonly reasons: string[];
  readonly originTopics: string[];
}

export type { DeadLetterRow, GroupStatus, LanesPage };

const token = new URLSearchParams(location.search).get('token') ?? '';

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(path, { ...init, headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` } });
  const body = (await response.json().catch(() => ({ error: `HTTP ${response.status}` }))) as T & { error?: string };
  if (!response.ok) throw new ApiError(response.status, body.error ?? `HTTP ${response.status}`);
  return body;
}

export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

export const api = {
  config: () => call<Config>('/api/config'),
  status: () => call<StatusReply>('/api/status'),
  lanes: (params: Record<string, string | number | undefined>) => call<LanesPage>(`/api/lanes${query(params)}`),
  deadLetters: (params: Record<string, string | number | undefined>) => call<DeadLetterPage>(`/api/dlq${query(params)}`),
  action: <T>(config: Config, path: string, body: object) =>
    call<T>(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': config.csrf },
      body: JSON.stringify({ ...body, confirmed: true }),
    }),
};
