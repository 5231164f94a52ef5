import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    pool: 'forks',
    // Two cores: two files at a time, each with its own databases and server.
    maxWorkers: 2,
    // Each worker process runs its files one after another on the modules it imported
    // once: a fresh process per file spent a median 6.9 s importing the service before
    // its first test (the whole run 21 min, now 14; no test mocks a module or the clock,
    // and each starts its own servers on its own databases).
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/support/plain-summary.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'service',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/e2e/**'],
        },
      },
      {
        // Real Chromium against the built web app, which the global setup builds once.
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 60_000,
          // A browser's work waits for the machine: on a busy CI host, a page reloaded
          // offline took over a second to show 540 cards from its copy (1 s is the default).
          expect: { poll: { timeout: 10_000 } },
        },
      },
    ],
  },
})
