// Lint: typescript-eslint's recommended type-aware rules, plus the ones that catch
// un-awaited promises (a rejected promise without a catch crashes the gateway).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'client/dist/**', 'node_modules/**', 'var/**', 'bench/results/**', 'test-artifacts/**', 'test/fixtures/openapi-client/**', 'packages/**', 'schemas/generated/*.js'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests read arbitrary JSON replies; typing each body would add noise, not safety.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
);
