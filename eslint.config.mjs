// typescript-eslint for the rules that need the type checker, and only those: a promise nobody
// awaits or handles, and a promise passed where a plain value or a void callback is expected.
// Formatting and the syntactic rules are Biome's (biome.jsonc), which runs in about a second.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/dist-types/**',
      '**/node_modules/**',
      '**/*.d.ts',
      '**/drizzle/**',
      '**/*.mjs',
      '**/*.js',
      '**/*.config.ts',
      'vitest.workspace.ts',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
);
