import { useState } from 'preact/hooks';
import type { GroupStatus } from './api';
import { show } from './format';
import { RecoveryBadge } from './recoveries';

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

type Row = { topic: string; role: Partition['role']; partitions: Partition[] };

function byTopic(partitions: readonly Partition[]): Row[] {
  const rows: Row[] = [];
  for (const p of partitions) {
    const last = rows[rows.length - 1];
    if (last !== undefined && last.topic === p.topic) last.partitions.push(p);
    else rows.push({ topic: p.topic, role: p.role, partitions: [p] });
  }
  return rows;
}

const sum = (ps: readonly Partition[], pick: (p: Partition) => number | undefined): number => ps.reduce((total, p) => total + (pick(p) ?? 0), 0);

function PartitionRow({ p }: { p: Partition }) {
  return (
    <tr class={`${p.role} partition`}>
      <td class="indent">{p.topic} <RecoveryBadge p={p} /></td><td class="n">{p.partition}</td><td>{p.role}</td>
      <td class="n">{show(p.committed)}</td><td class="n">{show(p.frontier)}</td><td class="n">{show(p.window)}</td>
      <td class="n">{show(p.endOffset)}</td><td class={`n ${(p.lag ?? 0) > 0 && p.role !== 'dead-letter' ? 'lag' : ''}`}>{show(p.lag)}</td>
      <td class="n">{p.blockedLanes}</td><td class="n">{p.heldLanes}</td><td class="n">{p.parked}</td>
      <td class="wide"><Bar p={p} /></td>
    </tr>
  );
}

/**
 * Every partition of the source, retry and dead-letter topics, under one line per topic with its totals. Source
 * topics start open; a retry or dead-letter topic opens on a click, or by itself while it has lag.
 */
export function Partitions({ partitions }: { partitions: GroupStatus['partitions'] }) {
  const [toggled, setToggled] = useState<Set<string>>(new Set());
  const toggle = (topic: string): void => {
    const next = new Set(toggled);
    if (next.has(topic)) next.delete(topic);
    else next.add(topic);
    setToggled(next);
  };
  return (
    <section>
      <h2>partitions</h2>
      <table class="partitions" data-testid="partitions">
        <thead>
          <tr><th>topic</th><th class="n">part</th><th>role</th><th class="n">committed</th><th class="n">frontier</th><th class="n">window</th><th class="n">end</th><th class="n">lag</th><th class="n">blocked</th><th class="n">held</th><th class="n">parked</th><th class="wide">progress</th></tr>
        </thead>
        <tbody>
          {byTopic(partitions).map((row) => {
            const lag = sum(row.partitions, (p) => p.lag);
            const openByDefault = row.role === 'source' || (row.role === 'retry' && lag > 0);
            const open = openByDefault !== toggled.has(row.topic);
            return [
              <tr key={row.topic} class={`${row.role} topic`} onClick={() => toggle(row.topic)}>
                <td>
                  <span class="caret">{open ? '▾' : '▸'}</span> {row.topic}
                  {!open && row.partitions.some((p) => p.recoveries > 0 || p.recovering) && <span class="badge recovered">recovered</span>}
                </td>
                <td class="n muted">{row.partitions.length}</td><td>{row.role}</td>
                <td /><td /><td class="n">{sum(row.partitions, (p) => p.window)}</td>
                <td class="n">{sum(row.partitions, (p) => p.endOffset)}</td>
                <td class={`n ${lag > 0 && row.role !== 'dead-letter' ? 'lag' : ''}`}>{lag}</td>
                <td class="n">{sum(row.partitions, (p) => p.blockedLanes)}</td><td class="n">{sum(row.partitions, (p) => p.heldLanes)}</td>
                <td class="n">{sum(row.partitions, (p) => p.parked)}</td><td />
              </tr>,
              ...(open ? row.partitions.map((p) => <PartitionRow key={`${p.topic}-${p.partition}`} p={p} />) : []),
            ];
          })}
        </tbody>
      </table>
      {partitions.length === 0 && <p class="muted">no partitions yet: nothing in Redis for this group and no retry or dead-letter topics</p>}
    </section>
  );
}
