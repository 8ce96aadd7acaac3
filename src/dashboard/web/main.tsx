import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { api, type Config, type DeadLetterPage, type LanesPage, type StatusReply } from './api';
import { Chart } from './chart';
import { DeadLetters } from './dead-letters';
import { Lanes } from './lanes';
import { Partitions } from './partitions';
import { RecoveringBanner } from './recoveries';
import { PAGE_SIZE, type DeadLetterQueryState, type LanesQueryState } from './state';

/**
 * The dashboard page: reads its server's JSON API every `readEveryMs` (short polling) and redraws. Each panel
 * keeps its own query (sort, page, filters); a change reads at once.
 */


/** Readings started and the latest shown, in start order. */
let calls = 0;
let applied = 0;

function App() {
  const [config, setConfig] = useState<Config | undefined>();
  const [status, setStatus] = useState<StatusReply | undefined>();
  const [lanes, setLanes] = useState<LanesPage | undefined>();
  const [letters, setLetters] = useState<DeadLetterPage | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [lanesQuery, setLanesQuery] = useState<LanesQueryState>({ sort: 'age', dir: 'asc', state: '', offset: 0 });
  const [lettersQuery, setLettersQuery] = useState<DeadLetterQueryState>({ reason: '', topic: '', lane: '', offset: 0 });
  const [log, setLog] = useState<string[]>([]);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    api.config().then(setConfig, (e: Error) => setError(e.message));
  }, []);

  const refresh = useCallback(async () => {
    const call = ++calls;
    try {
      const [s, l, d] = await Promise.all([
        api.status(),
        api.lanes({ ...lanesQuery, limit: PAGE_SIZE }),
        api.deadLetters({ ...lettersQuery, limit: PAGE_SIZE }),
      ]);
      // A reading started before a newer one (e.g. before a filter changed) must not overwrite it.
      if (call < applied) return;
      applied = call;
      setStatus(s);
      setLanes(l);
      setLetters(d);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  }, [lanesQuery, lettersQuery]);

  useEffect(() => {
    if (config === undefined) return;
    void refresh();
    const timer = setInterval(() => void refresh(), config.readEveryMs);
    return () => clearInterval(timer);
  }, [config, refresh, tick]);

  const act = async (what: string, path: string, body: object): Promise<void> => {
    if (config === undefined || !window.confirm(`${what}?`)) return;
    try {
      const result = await api.action<unknown>(config, path, body);
      setLog((old) => [`${new Date().toLocaleTimeString()} ${what}: done ${JSON.stringify(result)}`, ...old].slice(0, 20));
    } catch (e) {
      setLog((old) => [`${new Date().toLocaleTimeString()} ${what}: refused: ${(e as Error).message}`, ...old].slice(0, 20));
    }
    setTick((t) => t + 1);
  };

  const st = status?.status;
  const totals = st?.partitions.reduce(
    (sum, p) => ({ blocked: sum.blocked + p.blockedLanes, held: sum.held + p.heldLanes, parked: sum.parked + p.parked, lag: sum.lag + (p.role === 'source' ? (p.lag ?? 0) : 0) }),
    { blocked: 0, held: 0, parked: 0, lag: 0 },
  );
  const h = status?.history;
  const perMinute = status?.deadLettersPerMinute ?? [];
  return (
    <main>
      <header>
        <h1>kafka-lanes <span class="group">{config?.group ?? ''}</span></h1>
        <span class={`badge ${config?.actions === true ? 'on' : ''}`} data-testid="actions">{config?.actions === true ? 'actions on' : 'read only'}</span>
        <span class="read">{st === undefined ? '' : `read ${new Date(st.readAtMs).toLocaleTimeString()}`}</span>
      </header>
      {error !== undefined && <p class="error" role="alert">{error}</p>}
      {status?.error !== undefined && <p class="error" role="alert">reading the status failed: {status.error}</p>}
      {st !== undefined && <RecoveringBanner partitions={st.partitions} />}
      {totals !== undefined && st !== undefined && (
        <section class="cards">
          <Card label="source lag" value={totals.lag} />
          <Card label="blocked lanes" value={totals.blocked} warn={totals.blocked > 0} id="blocked-total" />
          <Card label="held" value={totals.held} warn={totals.held > 0} />
          <Card label="parked" value={totals.parked} />
          <Card label="retry depth" value={st.retryDepth} />
          <Card label="dead letters" value={st.deadLetters} warn={st.deadLetters > 0} />
        </section>
      )}
      {st !== undefined && <Partitions partitions={st.partitions} />}
      {h !== undefined && h.times.length > 0 && (
        <section class="charts">
          <Chart title="lag per partition" times={h.times} series={Object.entries(h.lag).map(([label, values]) => ({ label, values }))} />
          <Chart title="retry depth per tier" times={h.times} series={Object.entries(h.retryDepth).map(([label, values]) => ({ label, values }))} />
          <Chart title="blocked lanes" times={h.times} series={[{ label: 'blocked', values: h.blockedLanes }]} />
          <Chart title="dead letters per minute" bars times={perMinute.map(([t]) => t / 1000)} series={[{ label: 'dead letters', values: perMinute.map(([, c]) => c) }]} />
        </section>
      )}
      {lanes !== undefined && <Lanes page={lanes} query={lanesQuery} setQuery={setLanesQuery} actions={config?.actions === true} act={act} />}
      {letters !== undefined && (
        <DeadLetters page={letters} query={lettersQuery} setQuery={setLettersQuery} actions={config?.actions === true} act={act} problem={status?.deadLetterError} />
      )}
      {log.length > 0 && (
        <section>
          <h2>actions</h2>
          <ul class="log" data-testid="action-log">{log.map((line) => <li key={line}>{line}</li>)}</ul>
        </section>
      )}
    </main>
  );
}

function Card({ label, value, warn = false, id }: { label: string; value: number; warn?: boolean; id?: string }) {
  return (
    <div class={`card ${warn ? 'warn' : ''}`} data-testid={id}>
      <div class="value">{value.toLocaleString()}</div>
      <div class="label">{label}</div>
    </div>
  );
}

const root = document.getElementById('app');
if (root !== null) {
  root.textContent = '';
  render(<App />, root);
}
