/**
 * The candidate closest to `word`, if it is close enough to be what was meant: case-insensitive edit distance
 * (insertions, deletions, substitutions, adjacent transpositions) of at most a third of the candidate's length,
 * and at least 1. Ties go to the earlier candidate.
 *
 * @example
 * didYouMean('concurency', ['ordering', 'concurrency']); // 'concurrency'
 * didYouMean('banana', ['ordering', 'concurrency']); // undefined
 */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    const allowed = Math.max(1, Math.floor(candidate.length / 3));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

/** Optimal string alignment distance (Damerau–Levenshtein without repeated edits of one substring). */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between the first i characters of a and the first j of b.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i += 1) {
    const row = rows[i] as number[];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, at(i - 2, j - 2) + 1);
      row[j] = distance;
    }
  }
  return at(a.length, b.length);
}
