/** Run through `npm run test:*`: node --unhandled-rejections=strict, so a rejection nothing handles fails the run. */
/**
 * Two projects: `unit` never touches the network; `integration` talks to the real local stack, several files at a
 * time (`--maxWorkers` in package.json): each uses topics, groups and keys of its own, and the steps that rewrite a
 * folder of the checkout take test/integration/support/checkout-lock.ts.
 */
// @middy/core ships only ES modules; jest runs CommonJS, so it is transpiled like our own sources
// (Lambda's Node 22 loads it through require(esm) without this).
const transform = { '^.+\\.[tj]s$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true } }] };
const transformIgnorePatterns = ['/node_modules/(?!@middy/)'];

/** @type {import('jest').Config} */
module.exports = {
  // A global option (jest ignores it inside a project): integration tests wait on a real broker.
  testTimeout: 120000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
    },
  ],
};
