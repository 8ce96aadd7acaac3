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
 * Starts the dashboard; resolves once it listens.
 *
 * @example
 * const dashboard = await startDashboard({ group: 'orders-svc', admin, store, kafka });
 * console.log(`open ${dashboard.url}`);
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const { group, admin, store, operator } = options;
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomToken();
  const csrf = randomToken();
  const readEveryMs = options.readEveryMs ?? 2_000;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const history = new History(Math.ceil((15 * 60_000) / readEveryMs));
  const letters = new DeadLetterLog();
  let latest: { status?: GroupStatus; error?: string } = {};

  let follower: { stop: () => Promise<void> } | undefined;
  let following: Promise<void> | undefined;
  let closed = false;
  let dlqError: string | undefined = options.kafka === undefined ? 'the dead-letter topic is not followed' : undefined;
  // Follows the dead-letter topic once it exists: a group whose topic is created after the dashboard started
  // gets its browser at the next reading that shows the topic.
  const follow = async (kafka: Kafka): Promise<void> => {
    try {
      const started = await followDeadLetters(kafka, deadLetterTopic(group), letters);
      if (closed) await started.stop();
      else follower = started;
      dlqError = undefined;
    } catch (error) {
      dlqError = `the dead-letter topic ${deadLetterTopic(group)} cannot be read: ${redactSecrets(error instanceof Error ? error.message : String(error))}`;
    }
  };

  const read = async (): Promise<void> => {
    try {
      const status = await readStatus({ group, admin, store });
      history.add(sampleOf(status));
      latest = { status };
      const dlqExists = status.partitions.some((p) => p.role === 'dead-letter');
      if (options.kafka !== undefined && follower === undefined && following === undefined && dlqExists) {
        following = follow(options.kafka).finally(() => (following = undefined));
        await following;
      } else if (!dlqExists && options.kafka !== undefined) dlqError = `the dead-letter topic ${deadLetterTopic(group)} does not exist (yet)`;
    } catch (error) {
      latest = { ...latest, error: redactSecrets(error instanceof Error ? error.message : String(error)) };
    }
  };
  await read();
  let reading = false;
  const timer = setInterval(() => {
    if (reading) return;
    reading = true;
    void read().finally(() => (reading = false));
  }, readEveryMs);
  timer.unref();

  const routes: Record<string, (request: IncomingMessage, url: URL) => Promise<unknown>> = {
    'GET /api/config': async () => ({ group, actions: operator !== undefined, csrf, readEveryMs }),
    'GET /api/status': async () => ({
      ...latest,
      history: history.series(),
      deadLettersPerMinute: letters.perMinute(Date.now(), 30),
      deadLettersSeen: letters.seen,
      ...(dlqError === undefined ? {} : { deadLetterError: dlqError }),
    }),
    'GET /api/lanes': async (_request, url) => {
      const query = parseLanesQuery(url.searchParams);
      // The partitions of the last reading spare a SCAN of Redis per page; a new partition shows at the next reading.
      const partitions = latest.status?.partitions.filter((p) => p.role !== 'dead-letter');
      return readBlockedLanes({ group, store, query, ...(partitions === undefined ? {} : { partitions }) });
    },
    'GET /api/dlq': async (_request, url) => letters.page(parseDeadLetterQuery(url.searchParams)),
    'POST /api/lanes/release': async (request) => {
      const parts = actionParts(request);
      const ask = parseReleaseRequest(await readJson(request));
      const result = await releaseHeldLane(parts, { group, ...ask }, ask.lane);
      // A fresh reading, so the page's next poll already shows what the action changed.
      await read();
      log(`dashboard action: lane release ${group} ${ask.topic} ${ask.partition} ${ask.lane}: held head ${result.skipped} skipped, next head ${result.next ?? 'none (the lane is free)'}`);
      return result;
    },
    'POST /api/dlq/replay': async (request) => {
      const parts = actionParts(request);
      const ask = parseReplayRequest(await readJson(request));
      const selected = letters.select(ask.letters);
      if (selected.length === 0) throw new BadRequest('None of the selected dead letters is known to the dashboard (it keeps the latest 20,000)');
      const actions = await replayDeadLetters(parts, selected);
      await read();
      for (const a of actions) {
        log(`dashboard action: dlq replay ${deadLetterTopic(group)}-${a.deadLetter.partition}@${a.deadLetter.offset} (origin ${a.origin.topic}-${a.origin.partition}@${a.origin.offset ?? '?'}): ${a.action}: ${a.detail}`);
      }
      return { actions };
    },
  };

  function actionParts(request: IncomingMessage): NonNullable<DashboardOptions['operator']> {
    if (operator === undefined) throw new HttpError(403, 'Actions are off: start the dashboard with --actions to release lanes and replay dead letters');
    const refusal = csrfRefusal(request, csrf);
    if (refusal !== undefined) throw new HttpError(403, `Refused: ${refusal}`);
    return operator;
  }

  let bound = { host, port: 0 };
  const server: Server = createServer((request, response) => {
    void handle(request, response);
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://dashboard.invalid');
    } catch {
      return send(response, 400, { error: 'Expected a valid request path' });
    }
    if (!allowedHost(request.headers.host, bound)) return send(response, 421, { error: 'Expected the Host of this dashboard (127.0.0.1 or localhost with its port)' });
    if (!hasAccess(request, url, token)) return send(response, 401, { error: 'Expected the access token printed when the dashboard started (?token=...)' });
    try {
      if (request.method === 'GET' && url.pathname === '/') {
        response.writeHead(200, page.headers);
        response.end(page.html);
        return;
      }
      const route = routes[`${request.method ?? ''} ${url.pathname}`];
      if (route === undefined) {
        const known = Object.keys(routes).some((key) => key.endsWith(` ${url.pathname}`));
        return send(response, known ? 405 : 404, { error: known ? `Method ${request.method} not allowed here` : `No such path ${url.pathname}` });
      }
      send(response, 200, await route(request, url));
    } catch (error) {
      if (error instanceof BadRequest) return send(response, 400, { error: error.message });
      if (error instanceof HttpError) return send(response, error.status, { error: error.message });
      const message = redactSecrets(error instanceof Error ? error.message : String(error));
      log(`dashboard: ${request.method} ${url.pathname} failed: ${message}`);
      // An action refused by the lane's state (e.g. a retrying head) is the operator's to read, not a crash.
      send(response, error instanceof LaneStateError ? 409 : 500, { error: message });
    }
  }

  const page = renderPage();
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
      closed = true;
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await following;
      await follower?.stop().catch(() => undefined);
    },
  };
}
