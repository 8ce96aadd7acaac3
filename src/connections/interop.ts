/**
 * The exports of a CommonJS package loaded with `import()`, whoever loaded it. Node.js (its CommonJS export
 * detection), TypeScript's CommonJS output and an esbuild CommonJS bundle put the named exports on the namespace;
 * an esbuild ES module bundle cannot see them and gives `module.exports` as `default` only.
 *
 * @throws TypeError when neither has `probe` (a package whose exports changed shape).
 * @example
 * const { Kafka } = commonJsExports(await import('kafkajs'), 'Kafka');
 */
export function commonJsExports<T extends object>(namespace: T, probe: keyof T & string): T {
  if (namespace[probe] !== undefined) return namespace;
  const exports = (namespace as { default?: T }).default;
  if (exports?.[probe] === undefined) throw new TypeError(`Expected the imported module to export \`${probe}\`, got exports ${Object.keys(namespace).join(', ')}`);
  return exports;
}
