/**
 * A plain in-memory model of one partition's completion state, written from DESIGN.md section 5 and
 * nothing else: the property test checks that the Redis engine agrees with it on every frontier.
 */
export class CompletionModel {
  private readonly done = new Set<number>();
  private base: number | undefined;
  private highest = -1;

  constructor(private readonly maxWindow: number) {}

  frontier(): number | undefined {
    if (this.base === undefined) return undefined;
    let f = this.base;
    while (f <= this.highest && this.done.has(f)) f += 1;
    return f;
  }

  /** Same statuses as the engine for independent records: run, duplicate or refused. */
  admit(offsets: number[]): Array<'run' | 'duplicate' | 'refused'> {
    if (this.base === undefined && offsets.length > 0) {
      this.base = offsets[0]!;
      this.highest = this.base - 1;
    }
    return offsets.map((o) => {
      const base = this.base!;
      if (o < base || this.done.has(o)) return 'duplicate';
      if (o <= this.highest) return 'run';
      const frontier = this.frontier()!;
      // With everything delivered already done, the window restarts at o, whatever the distance.
      if (frontier <= this.highest && o >= frontier + this.maxWindow) return 'refused';
      for (let gap = this.highest + 1; gap < o; gap += 1) this.done.add(gap);
      this.highest = o;
      return 'run';
    });
  }

  mark(offsets: number[]): void {
    for (const o of offsets) this.done.add(o);
  }

  /** Offsets below base are done by definition; trimming must not change the frontier. */
  trim(): void {
    const f = this.frontier();
    if (f === undefined || this.base === undefined) return;
    const bytes = Math.floor((f - this.base) / 8);
    this.base += bytes * 8;
  }

  get admittedUpTo(): number {
    return this.highest;
  }
}
