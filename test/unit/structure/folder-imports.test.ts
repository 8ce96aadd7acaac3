import { sourceImports, unitCycles, unitOf } from './source-tree';

describe('folders under src/', () => {
  const imports = sourceImports();

  it('finds the imports it checks', () => {
    // Guards the check itself: a parser that saw nothing would pass every tree.
    expect(imports.some((edge) => edge.from === 'handler/lanes-function.ts' && unitOf(edge.to) === 'engine/')).toBe(true);
  });

  it('has no cycle of folders, of any length: dependencies point one way', () => {
    expect(unitCycles(imports)).toEqual([]);
  });

  it('reports a pair of folders that import each other, with one import each way', () => {
    const cycles = unitCycles([
      { from: 'engine/engine.ts', to: 'processor/scheduler.ts' },
      { from: 'processor/processor.ts', to: 'engine/engine.ts' },
      { from: 'engine/engine.ts', to: 'errors.ts' },
    ]);
    expect(cycles).toEqual(['engine/ -> processor/ -> engine/ (engine/engine.ts imports processor/scheduler.ts; processor/processor.ts imports engine/engine.ts)']);
  });

  it('reports a cycle through three folders that no pair of them closes', () => {
    const cycles = unitCycles([
      { from: 'engine/engine.ts', to: 'handoff/writer.ts' },
      { from: 'handoff/writer.ts', to: 'connections/redis.ts' },
      { from: 'connections/redis.ts', to: 'engine/telemetry.ts' },
      { from: 'connections/kafka.ts', to: 'errors.ts' },
    ]);
    expect(cycles).toEqual([
      'connections/ -> engine/ -> handoff/ -> connections/ (connections/redis.ts imports engine/telemetry.ts; engine/engine.ts imports handoff/writer.ts; handoff/writer.ts imports connections/redis.ts)',
    ]);
  });

  it('finds no cycle in a graph that points one way', () => {
    expect(
      unitCycles([
        { from: 'engine/engine.ts', to: 'handoff/writer.ts' },
        { from: 'handoff/writer.ts', to: 'connections/redis.ts' },
        { from: 'engine/engine.ts', to: 'connections/kafka.ts' },
      ]),
    ).toEqual([]);
  });
});
