import { functionLengths, longFunctions, LONG_FUNCTION_LINES } from './long-functions';

describe('the count of long functions (npx tsx test/unit/structure/long-functions.ts)', () => {
  it('measures every kind of function from its signature to its last line, after its doc comment, nested ones too', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      '/** A doc comment is not counted. */',
      'export function outer(): void {',
      body(3),
      '  const inner = (): number => {',
      '    return 1;',
      '  };',
      '}',
      'class A {',
      '  constructor() {}',
      '  get b(): number { return 1; }',
      '  #run = function () {',
      '    return 2;',
      '  };',
      '}',
      'declare function shape(): void;',
    ].join('\n');
    expect(functionLengths('a.ts', text).map(({ name, line, lines }) => [name, line, lines])).toEqual([
      ['outer', 2, 8], ['inner', 6, 3], ['constructor', 11, 1], ['b', 12, 1], ['#run', 13, 3],
    ]);
  });

  it('finds the long functions of src/, each over the limit, longest first', () => {
    const long = longFunctions();
    expect(long.length).toBeGreaterThan(0);
    expect(long.every((fn) => fn.lines > LONG_FUNCTION_LINES)).toBe(true);
    expect(long.map((fn) => fn.lines)).toEqual([...long.map((fn) => fn.lines)].sort((a, b) => b - a));
  });
});
