/** Two projects: `unit` never touches the network; `integration` talks to the real local stack (run in band). */
const transform = { '^.+\\.ts$': ['ts-jest', { isolatedModules: true }] };

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testTimeout: 120000,
    },
  ],
};
