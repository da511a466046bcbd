import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // uWebSockets.js is a native addon: run each file in its own process.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
