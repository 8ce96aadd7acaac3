import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { readBlockedLanes, readStatus, type GroupStatus } from '../admin/status';
import type { CompletionStore } from '../completion/store';
import { deadLetterTopic } from '../options/names';
import { replayDeadLetters } from '../operations/dead-letters';
import { LaneStateError, releaseHeldLane, type OperatorParts } from '../operations/lanes';
import { DeadLetterLog, followDeadLetters } from './dead-letters';
import { History, sampleOf } from './history';
import { renderPage } from './page';
import { BadRequest, parseDeadLetterQuery, parseLanesQuery, parseReleaseRequest, parseReplayRequest } from './query';
import { allowedHost, csrfRefusal, hasAccess, randomToken, redactSecrets } from './security';

/**
 * `kafka-lanes dashboard`: a small HTTP server (node:http) for one group. It reads through the module `status`
 * reads through, on a timer, and keeps the readings for the charts; the page polls its JSON API. Actions run the
 * code of `lane release` and `dlq replay`, and only when the server was given the operator parts to do so.
 */

export interface DashboardOptions {
  readonly group: string;
  readonly admin: Admin;
  /** The completion store on the group's Redis. */
  readonly store: CompletionStore;
  /** Follows the dead-letter topic; without it the page has no dead-letter browser. */
  readonly kafka?: Kafka;
  /** Actions are on only with these (the `--actions` flag). */
  readonly operator?: OperatorParts & { readonly producer: Pick<Producer, 'send'> };
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Default: a random one. */
  readonly token?: string;
  /** How often the status is read. Default 2 s. */
  readonly readEveryMs?: number;
  /** Where actions and errors are logged, one line each. Default stderr. */
  readonly log?: (line: string) => void;
}

export interface Dashboard {
  /** The URL to open, token included. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const BODY_LIMIT = 64 * 1024;

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  response.end(text);
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT) throw new HttpError(413, `Expected a body of at most ${BODY_LIMIT} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new BadRequest('Expected a JSON body');
  }
}

/**
 * The group as the dashboard last read it, on a timer: the status and its history for the charts, and the dead
 * letters followed once the dead-letter topic exists.
 */
class GroupReadings {
  readonly history: History;
  readonly letters = new DeadLetterLog();
  latest: { status?: GroupStatus; error?: string } = {};
  dlqError: string | undefined;
  #follower: { stop: () => Promise<void> } | undefined;
  #following: Promise<void> | undefined;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: Pick<DashboardOptions, 'group' | 'admin' | 'store' | 'kafka'>,
    readEveryMs: number,
  ) {
    this.history = new History(Math.ceil((15 * 60_000) / readEveryMs));
    this.dlqError = options.kafka === undefined ? 'the dead-letter topic is not followed' : undefined;
  }

  /** Reads now, then every `readEveryMs` (a reading still running is not doubled). */
  async start(readEveryMs: number): Promise<void> {
    await this.read();
    let reading = false;
    this.#timer = setInterval(() => {
      if (reading) return;
      reading = true;
      void this.read().finally(() => (reading = false));
    }, readEveryMs);
    this.#timer.unref();
  }

  async read(): Promise<void> {
    const { group, admin, store, kafka } = this.options;
    try {
      const status = await readStatus({ group, admin, store });
      this.history.add(sampleOf(status));
      this.latest = { status };
      const dlqExists = status.partitions.some((p) => p.role === 'dead-letter');
      if (kafka !== undefined && this.#follower === undefined && this.#following === undefined && dlqExists) {
        this.#following = this.#follow(kafka).finally(() => (this.#following = undefined));
        await this.#following;
      } else if (!dlqExists && kafka !== undefined) this.dlqError = `the dead-letter topic ${deadLetterTopic(group)} does not exist (yet)`;
    } catch (error) {
      this.latest = { ...this.latest, error: redactSecrets(error instanceof Error ? error.message : String(error)) };
    }
  }

  // Follows the dead-letter topic once it exists: a group whose topic is created after the dashboard started
  // gets its browser at the next reading that shows the topic.
  async #follow(kafka: Kafka): Promise<void> {
    const topic = deadLetterTopic(this.options.group);
    try {
      const started = await followDeadLetters(kafka, topic, this.letters);
      if (this.#closed) await started.stop();
      else this.#follower = started;
      this.dlqError = undefined;
    } catch (error) {
      this.dlqError = `the dead-letter topic ${topic} cannot be read: ${redactSecrets(error instanceof Error ? error.message : String(error))}`;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#following;
    await this.#follower?.stop().catch(() => undefined);
  }
}

type Route = (request: IncomingMessage, url: URL) => Promise<unknown>;

/** What an action needs beside the readings: the operator parts (or none), the page's CSRF token, the log. */
interface ActionContext {
  readonly operator: DashboardOptions['operator'];
  readonly csrf: string;
  readonly log: (line: string) => void;
}

/** The JSON API the page polls, and the actions (`lane release`, `dlq replay`) when the operator parts are given. */
function apiRoutes(options: DashboardOptions, readings: GroupReadings, context: ActionContext & { readonly readEveryMs: number }): Record<string, Route> {
  const { group, store } = options;
  const { operator, csrf, log, readEveryMs } = context;
  const actionParts = (request: IncomingMessage): NonNullable<DashboardOptions['operator']> => {
    if (operator === undefined) throw new HttpError(403, 'Actions are off: start the dashboard with --actions to release lanes and replay dead letters');
    const refusal = csrfRefusal(request, csrf);
    if (refusal !== undefined) throw new HttpError(403, `Refused: ${refusal}`);
    return operator;
  };
  return {
    'GET /api/config': async () => ({ group, actions: operator !== undefined, csrf, readEveryMs }),
    'GET /api/status': async () => ({
      ...readings.latest,
      history: readings.history.series(),
      deadLettersPerMinute: readings.letters.perMinute(Date.now(), 30),
      deadLettersSeen: readings.letters.seen,
      ...(readings.dlqError === undefined ? {} : { deadLetterError: readings.dlqError }),
    }),
    'GET /api/lanes': async (_request, url) => {
      const query = parseLanesQuery(url.searchParams);
      // The partitions of the last reading spare a SCAN of Redis per page; a new partition shows at the next reading.
      const partitions = readings.latest.status?.partitions.filter((p) => p.role !== 'dead-letter');
      return readBlockedLanes({ group, store, query, ...(partitions === undefined ? {} : { partitions }) });
    },
    'GET /api/dlq': async (_request, url) => readings.letters.page(parseDeadLetterQuery(url.searchParams)),
    'POST /api/lanes/release': async (request) => {
      const parts = actionParts(request);
      const ask = parseReleaseRequest(await readJson(request));
      const result = await releaseHeldLane(parts, { group, ...ask }, ask.lane);
      // A fresh reading, so the page's next poll already shows what the action changed.
      await readings.read();
      log(`dashboard action: lane release ${group} ${ask.topic} ${ask.partition} ${ask.lane}: held head ${result.skipped} skipped, next head ${result.next ?? 'none (the lane is free)'}`);
      return result;
    },
    'POST /api/dlq/replay': async (request) => {
      const parts = actionParts(request);
      const ask = parseReplayRequest(await readJson(request));
      const selected = readings.letters.select(ask.letters);
      if (selected.length === 0) throw new BadRequest('None of the selected dead letters is known to the dashboard (it keeps the latest 20,000)');
      const actions = await replayDeadLetters(parts, selected);
      await readings.read();
      for (const a of actions) {
        log(`dashboard action: dlq replay ${deadLetterTopic(group)}-${a.deadLetter.partition}@${a.deadLetter.offset} (origin ${a.origin.topic}-${a.origin.partition}@${a.origin.offset ?? '?'}): ${a.action}: ${a.detail}`);
      }
      return { actions };
    },
  };
}

/** One request: the Host and the token checked, then the page, or an API route, or the error as JSON. */
async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  site: {
    readonly routes: Record<string, Route>;
    readonly page: ReturnType<typeof renderPage>;
    readonly token: string;
    readonly bound: () => { host: string; port: number };
    readonly log: (line: string) => void;
  },
): Promise<void> {
  let url: URL;
  try {
    url = new URL(request.url ?? '/', 'http://dashboard.invalid');
  } catch {
    return send(response, 400, { error: 'Expected a valid request path' });
  }
  if (!allowedHost(request.headers.host, site.bound())) return send(response, 421, { error: 'Expected the Host of this dashboard (127.0.0.1 or localhost with its port)' });
  if (!hasAccess(request, url, site.token)) return send(response, 401, { error: 'Expected the access token printed when the dashboard started (?token=...)' });
  try {
    if (request.method === 'GET' && url.pathname === '/') {
      response.writeHead(200, site.page.headers);
      response.end(site.page.html);
      return;
    }
    const route = site.routes[`${request.method ?? ''} ${url.pathname}`];
    if (route === undefined) {
      const known = Object.keys(site.routes).some((key) => key.endsWith(` ${url.pathname}`));
      return send(response, known ? 405 : 404, { error: known ? `Method ${request.method} not allowed here` : `No such path ${url.pathname}` });
    }
    send(response, 200, await route(request, url));
  } catch (error) {
    if (error instanceof BadRequest) return send(response, 400, { error: error.message });
    if (error instanceof HttpError) return send(response, error.status, { error: error.message });
    const message = redactSecrets(error instanceof Error ? error.message : String(error));
    site.log(`dashboard: ${request.method} ${url.pathname} failed: ${message}`);
    // An action refused by the lane's state (e.g. a retrying head) is the operator's to read, not a crash.
    send(response, error instanceof LaneStateError ? 409 : 500, { error: message });
  }
}

/**
 * Starts the dashboard; resolves once it listens.
 *
 * @example
 * const dashboard = await startDashboard({ group: 'orders-svc', admin, store, kafka });
 * console.log(`open ${dashboard.url}`);
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomToken();
  const readEveryMs = options.readEveryMs ?? 2_000;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const readings = new GroupReadings(options, readEveryMs);
  await readings.start(readEveryMs);
  const routes = apiRoutes(options, readings, { operator: options.operator, csrf: randomToken(), log, readEveryMs });

  const page = renderPage();
  let bound = { host, port: 0 };
  const server: Server = createServer((request, response) => {
    void handle(request, response, { routes, page, token, bound: () => bound, log });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  bound = { host, port };
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}/?token=${token}`,
    port,
    close: async () => {
      const stopped = readings.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await stopped;
    },
  };
}
