import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '**/dist-lambda/', 'node_modules/', '.local/', '.sls-tmp/', 'coverage/', '.serverless/', 'jest.config.js', '.bench-interleave/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The serverless plugin's entry: plain CommonJS, loaded by the framework.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
);
