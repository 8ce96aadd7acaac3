import type { LanesPage } from './api';
import { age, until } from './format';
import { PAGE_SIZE, type LanesQueryState } from './state';
import { Pager } from './pager';

const COLUMNS: ReadonlyArray<[string, string | undefined]> = [
  ['partition', 'partition'], ['key', 'key'], ['head offset', 'offset'], ['attempt', 'attempt'], ['state', 'state'],
  ['age', 'age'], ['next due', 'due'], ['parked', undefined], ['reason', undefined],
];

export interface LanesProps {
  page: LanesPage;
  query: LanesQueryState;
  setQuery: (query: LanesQueryState) => void;
  actions: boolean;
  act: (what: string, path: string, body: object) => Promise<void>;
}

export function Lanes({ page, query, setQuery, actions, act }: LanesProps) {
  const sortBy = (sort: string): void =>
    setQuery({ ...query, sort, dir: query.sort === sort && query.dir === 'asc' ? 'desc' : 'asc', offset: 0 });
  const now = Date.now();
  return (
    <section>
      <h2>
        blocked and held lanes <span class="count" data-testid="lanes-total">{page.total.toLocaleString()}</span>
        <select aria-label="state" value={query.state} onChange={(e) => setQuery({ ...query, state: (e.target as HTMLSelectElement).value as LanesQueryState['state'], offset: 0 })}>
          <option value="">all states</option><option value="retrying">retrying</option><option value="held">held</option>
        </select>
      </h2>
      <table class="lanes" data-testid="lanes">
        <thead>
          <tr>
            {COLUMNS.map(([title, sort]) => (
              <th key={title} class={sort === undefined ? '' : 'sortable'} onClick={sort === undefined ? undefined : () => sortBy(sort)}>
                {title}{query.sort === sort ? (query.dir === 'asc' ? ' ▲' : ' ▼') : ''}
              </th>
            ))}
            {actions && <th />}
          </tr>
        </thead>
        <tbody>
          {page.lanes.map((l) => (
            <tr key={`${l.topic}-${l.partition}-${l.lane}`} class={l.state} data-lane={l.lane}>
              <td>{l.topic}-{l.partition}</td>
              <td class="key" title={`lane id ${l.lane}`}>{l.key}</td>
              <td class="n">{l.headOffset}</td>
              <td class="n attempt">{l.attempt}</td>
              <td><span class={`state ${l.state}`}>{l.state}</span></td>
              <td class="n">{age(l.sinceMs, now)}</td>
              <td>{l.state === 'held' ? 'waits for an operator' : until(l.dueAtMs, now)}</td>
              <td class="n">{l.parked}</td>
              <td>{l.reason}</td>
              {actions && (
                <td>
                  {l.state === 'held' && (
                    <button class="act" onClick={() => void act(`Release lane ${l.key} of ${l.topic}-${l.partition} (skip held head ${l.headOffset})`, '/api/lanes/release', { topic: l.topic, partition: l.partition, lane: l.lane })}>
                      release
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {page.total === 0 && <p class="muted" data-testid="no-lanes">no blocked lane</p>}
      <Pager offset={page.offset} total={page.total} size={PAGE_SIZE} go={(offset) => setQuery({ ...query, offset })} />
    </section>
  );
}
