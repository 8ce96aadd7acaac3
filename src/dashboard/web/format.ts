/** How the page shows times and durations. */

export function age(fromMs: number, nowMs = Date.now()): string {
  const s = Math.max(0, Math.round((nowMs - fromMs) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export function until(atMs: number, nowMs = Date.now()): string {
  const s = Math.round((atMs - nowMs) / 1000);
  return s <= 0 ? 'due now' : `in ${s < 120 ? `${s}s` : `${Math.floor(s / 60)}m`}`;
}

export function show(value: number | undefined): string {
  return value === undefined ? '–' : value.toLocaleString();
}
