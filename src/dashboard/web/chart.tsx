import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

/** A small uPlot chart: created once, its data replaced on every reading. */

export interface ChartProps {
  readonly title: string;
  readonly times: number[];
  readonly series: ReadonlyArray<{ label: string; values: Array<number | null> }>;
  readonly bars?: boolean;
  readonly height?: number;
}

const COLORS = ['#2563eb', '#d97706', '#16a34a', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#ea580c', '#4b5563'];

export function Chart({ title, times, series, bars = false, height = 160 }: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join('\n');

  useEffect(() => {
    if (host.current === null) return;
    const width = Math.max(260, host.current.clientWidth);
    const options: uPlot.Options = {
      title,
      width,
      height,
      legend: { show: series.length <= 12 },
      scales: { y: { range: (_u, min, max) => [0, Math.max(1, max, min)] } },
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 1.5,
          ...(bars ? { paths: uPlot.paths.bars!({ size: [0.6, 40] }), fill: `${COLORS[i % COLORS.length]}99` } : {}),
        })),
      ],
      axes: [{}, { size: 50 }],
    };
    plot.current = new uPlot(options, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, host.current);
    const resize = (): void => plot.current?.setSize({ width: Math.max(260, host.current?.clientWidth ?? width), height });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current?.destroy();
      plot.current = null;
    };
    // Rebuilt only when the set of series changes; new readings go through setData below.
  }, [shape, title, bars, height]);

  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [times, series]);

  return <div class="chart" ref={host} />;
}
