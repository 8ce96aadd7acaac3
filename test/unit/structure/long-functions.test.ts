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

  it('finds no function of src/ over the limit (the last one was split): a new one is named with its file and line', () => {
    const long = longFunctions().map((fn) => `${fn.file}:${fn.line} ${fn.name} (${fn.lines} lines)`);
    expect(long).toEqual([]);
  });

  it('names a function over the limit in a source text', () => {
    const lines = LONG_FUNCTION_LINES + 1;
    const text = ['export function long(): void {', ...Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`), '}'].join('\n');
    expect(functionLengths('a.ts', text).filter((fn) => fn.lines > LONG_FUNCTION_LINES).map((fn) => [fn.name, fn.lines])).toEqual([['long', lines]]);
  });
});
