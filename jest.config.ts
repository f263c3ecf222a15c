import type { Config } from 'jest'

const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.json' }],
  },
  // Tests run against the sources, so a change is tested without a rebuild.
  moduleNameMapper: {
    '^@sluice/core/adapter$': '<rootDir>/packages/core/src/adapter.ts',
    '^@sluice/([a-z-]+)/compat$': '<rootDir>/packages/$1/src/compat/index.ts',
    // Jest runs on Node, which resolves @sluice/core/web by its `node` condition.
    '^@sluice/core/web$': '<rootDir>/packages/core/src/web-node.ts',
    // and @sluice/fetch by its `node` condition too (rules files through @sluice/rules).
    '^@sluice/fetch$': '<rootDir>/packages/fetch/src/node.ts',
    '^@sluice/([a-z-]+)$': '<rootDir>/packages/$1/src/index.ts',
  },
  globalSetup: '<rootDir>/packages/testkit/src/global-setup.ts',
  globalTeardown: '<rootDir>/packages/testkit/src/global-teardown.ts',
  testTimeout: 20000,
  // Most test files wait on servers, child processes and timers: two workers on two cores run
  // the suite in about 60% of one worker's time (Jest's default here is cores - 1 = 1).
  maxWorkers: 2,
  // A worker's heap grows with every file it runs (each file's module registry; 0.6 GB after
  // core's 30 files): once one ran out of memory late in the suite. Past 1 GB after a file,
  // the worker is replaced.
  workerIdleMemoryLimit: '1GB',
  reporters: ['default', '<rootDir>/packages/testkit/src/summary-reporter.js'],
}

export default config
