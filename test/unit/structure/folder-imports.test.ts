import { mutualImports, sourceImports, unitOf } from './source-tree';

describe('folders under src/', () => {
  const imports = sourceImports();

  it('finds the imports it checks', () => {
    // Guards the check itself: a parser that saw nothing would pass every tree.
    expect(imports.some((edge) => edge.from === 'handler/lanes-function.ts' && unitOf(edge.to) === 'engine/')).toBe(true);
  });

  it('has no two folders that import each other', () => {
    expect(mutualImports(imports)).toEqual([]);
  });

  it('reports a pair of folders that import each other, with one import each way', () => {
    const cycle = mutualImports([
      { from: 'engine/engine.ts', to: 'processor/scheduler.ts' },
      { from: 'processor/processor.ts', to: 'engine/engine.ts' },
      { from: 'engine/engine.ts', to: 'errors.ts' },
    ]);
    expect(cycle).toEqual(['engine/ <-> processor/ (engine/engine.ts imports processor/scheduler.ts; processor/processor.ts imports engine/engine.ts)']);
  });
});
