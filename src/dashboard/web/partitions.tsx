import type { GroupStatus } from './api';
import { show } from './format';

type Partition = GroupStatus['partitions'][number];

/**
 * One bar per partition, from the log start to its end offset: committed (green), the window above the
 * frontier (amber: delivered, not all done) and the rest of the lag (grey: not yet delivered or not committed).
 */
function Bar({ p }: { p: Partition }) {
  const start = p.startOffset ?? 0;
  const end = p.endOffset ?? 0;
  const span = Math.max(1, end - start);
  const at = (offset: number | undefined): number => Math.min(100, Math.max(0, (((offset ?? start) - start) / span) * 100));
  const committed = at(p.committed ?? p.frontier);
  const frontier = Math.max(committed, at(p.frontier));
  const highest = Math.max(frontier, at(p.highest === undefined ? undefined : p.highest + 1));
  return (
    <div class="bar" title={`committed ${show(p.committed)} · frontier ${show(p.frontier)} · window ${show(p.window)} · end ${show(p.endOffset)}`}>
      <span class="done" style={{ width: `${committed}%` }} />
      <span class="uncommitted" style={{ width: `${frontier - committed}%` }} />
      <span class="window" style={{ width: `${highest - frontier}%` }} />
    </div>
  );
}

export function Partitions({ partitions }: { partitions: GroupStatus['partitions'] }) {
  return (
    <section>
      <h2>partitions</h2>
      <table class="partitions" data-testid="partitions">
        <thead>
          <tr><th>topic</th><th>part</th><th>role</th><th class="n">committed</th><th class="n">frontier</th><th class="n">window</th><th class="n">end</th><th class="n">lag</th><th class="n">blocked</th><th class="n">held</th><th class="n">parked</th><th class="wide">progress</th></tr>
        </thead>
        <tbody>
          {partitions.map((p) => (
            <tr key={`${p.topic}-${p.partition}`} class={p.role}>
              <td>{p.topic}</td><td>{p.partition}</td><td>{p.role}</td>
              <td class="n">{show(p.committed)}</td><td class="n">{show(p.frontier)}</td><td class="n">{show(p.window)}</td>
              <td class="n">{show(p.endOffset)}</td><td class={`n ${(p.lag ?? 0) > 0 ? 'lag' : ''}`}>{show(p.lag)}</td>
              <td class="n">{p.blockedLanes}</td><td class="n">{p.heldLanes}</td><td class="n">{p.parked}</td>
              <td class="wide"><Bar p={p} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      {partitions.length === 0 && <p class="muted">no partitions yet: nothing in Redis for this group and no retry or dead-letter topics</p>}
    </section>
  );
}
