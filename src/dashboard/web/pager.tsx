export function Pager({ offset, total, size, go }: { offset: number; total: number; size: number; go: (offset: number) => void }) {
  if (total <= size && offset === 0) return null;
  return (
    <div class="pager">
      <button disabled={offset === 0} onClick={() => go(Math.max(0, offset - size))}>‹ newer page</button>
      <span>{total === 0 ? 0 : offset + 1}–{Math.min(total, offset + size)} of {total.toLocaleString()}</span>
      <button disabled={offset + size >= total} onClick={() => go(offset + size)}>next page ›</button>
    </div>
  );
}
