import fc from 'fast-check';
import { OUTPUT_HEADER } from '../../../src/lanes/effects';
import { parseOutputId } from '../../../src/engine/outputs';
import { effectsHistoryArb, runEffectsHistory } from '../../support/effects-history';

/**
 * Randomized histories of durable steps and outputs with containers dying at every kind of boundary (inside a step,
 * after a step's result is stored, after outputs are acknowledged and before the done bit): a completed step never
 * runs again, an effect runs twice only when a crash cut its step off (the counts are equal), and every output of
 * a record is acknowledged before the record is done.
 */
jest.setTimeout(120_000);

describe('steps and outputs under crashes (randomized histories on the in-memory model)', () => {
  it('runs each completed step once and sends every output before its record is done', async () => {
    let crashes = 0;
    let cutInside = 0;
    let repeatedOutputs = 0;
    await fc.assert(fc.asyncProperty(effectsHistoryArb, async (history) => {
      const result = await runEffectsHistory(history);
      crashes += result.crashed;
      expect(result.completedStepRanAgain).toEqual([]);
      expect(result.doneBeforeOutputs).toEqual([]);
      history.records.forEach((spec, offset) => {
        for (let s = 0; s < spec.steps; s += 1) {
          const id = `${offset}/s${s}`;
          cutInside += result.cutInside.get(id) ?? 0;
          expect(result.effects.get(id)).toBe(1 + (result.cutInside.get(id) ?? 0));
        }
      });
      const ids = result.outputs.map((o) => {
        const id = parseOutputId(String(o.headers[OUTPUT_HEADER]));
        return `${id?.origin.topic}/${id?.origin.partition}/${id?.origin.offset}#${id?.index}`;
      });
      const expected = history.records.flatMap((spec, offset) => Array.from({ length: spec.outputs }, (_, o) => `orders/0/${offset}#${o}`));
      expect(new Set(ids)).toEqual(new Set(expected));
      repeatedOutputs += ids.length - new Set(ids).size;
    }), { numRuns: 150, seed: 1_717 });
    // The histories reached what they are for.
    expect(crashes).toBeGreaterThan(20);
    expect(cutInside).toBeGreaterThan(0);
    expect(repeatedOutputs).toBeGreaterThan(0);
  });
});
