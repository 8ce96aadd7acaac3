import { useState } from 'preact/hooks';
import type { DeadLetterPage } from './api';
import { PAGE_SIZE, type DeadLetterQueryState } from './state';
import { Pager } from './pager';

export interface DeadLettersProps {
  page: DeadLetterPage;
  query: DeadLetterQueryState;
  setQuery: (query: DeadLetterQueryState) => void;
  actions: boolean;
  act: (what: string, path: string, body: object) => Promise<void>;
  problem: string | undefined;
}

export function DeadLetters({ page, query, setQuery, actions, act, problem }: DeadLettersProps) {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const toggle = (id: string): void => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const replay = async (): Promise<void> => {
    const letters = [...selected].map((id) => {
      const [partition, offset] = id.split('@').map(Number);
      return { partition, offset };
    });
    await act(`Replay ${letters.length} dead letter(s)`, '/api/dlq/replay', { letters });
    setSelected(new Set());
  };
  const filter = (name: keyof DeadLetterQueryState) => (e: Event) => setQuery({ ...query, [name]: (e.target as HTMLInputElement).value, offset: 0 });
  return (
    <section>
      <h2>dead letters <span class="count">{page.total.toLocaleString()}</span></h2>
      {problem !== undefined && <p class="muted">{problem}</p>}
      <div class="filters">
        <select aria-label="reason" value={query.reason} onChange={filter('reason')}>
          <option value="">every reason</option>
          {page.reasons.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
        <select aria-label="origin topic" value={query.topic} onChange={filter('topic')}>
          <option value="">every origin topic</option>
          {page.originTopics.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <input aria-label="lane" placeholder="lane id" value={query.lane} onChange={filter('lane')} />
        {actions && <button class="act" disabled={selected.size === 0} onClick={() => void replay()}>replay {selected.size} selected</button>}
      </div>
      <table class="letters" data-testid="dead-letters">
        <thead>
          <tr>{actions && <th />}<th>time</th><th>reason</th><th>origin</th><th class="n">attempt</th><th>error</th><th>value</th></tr>
        </thead>
        <tbody>
          {page.rows.map((row) => {
            const id = `${row.partition}@${row.offset}`;
            return (
              <tr key={id}>
                {actions && <td><input type="checkbox" aria-label={`select ${id}`} checked={selected.has(id)} onChange={() => toggle(id)} /></td>}
                <td>{new Date(row.timeMs).toLocaleTimeString()}</td>
                <td><span class="reason">{row.reason}</span></td>
                <td>{row.origin.topic}-{row.origin.partition}@{row.origin.offset ?? '?'}</td>
                <td class="n">{row.attempt ?? ''}</td>
                <td class="error-text">{row.error}</td>
                <td class="preview" title={`${row.valueBytes} bytes`}>{row.preview ?? '(null)'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <Pager offset={query.offset} total={page.total} size={PAGE_SIZE} go={(offset) => setQuery({ ...query, offset })} />
    </section>
  );
}
