import { commonJsExports } from '../../../src/connections/interop';

describe('commonJsExports', () => {
  const exports = { Kafka: class Kafka {}, logLevel: { ERROR: 1 } };

  it('gives the namespace when it carries the named exports (Node.js, TypeScript and esbuild CommonJS)', () => {
    // Prepare
    const namespace = { ...exports, default: exports };

    // Act / Assess
    expect(commonJsExports(namespace, 'Kafka')).toBe(namespace);
  });

  it("gives `default` when the namespace has nothing else (an esbuild ES module bundle's `import()` of CommonJS)", () => {
    // Prepare
    const namespace = { default: exports } as unknown as typeof exports;

    // Act / Assess
    expect(commonJsExports(namespace, 'Kafka')).toBe(exports);
  });

  it('throws, naming what it expected and what it got, when neither has the export', () => {
    // Prepare
    const namespace = { default: {} } as unknown as typeof exports;

    // Act / Assess
    expect(() => commonJsExports(namespace, 'Kafka')).toThrow(new TypeError('Expected the imported module to export `Kafka`, got exports default'));
  });
});
