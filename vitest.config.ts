import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Redis at REDIS_URL, or a private redis-server for the run, or one clear line saying why not.
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // The suite mostly waits (on real servers, outages, timeouts): Vitest's default of one worker
    // fewer than the cores ran it file by file on a 2-core machine, the CPU a third busy. Two
    // files at a time there took it from 610 s to 325 s. Elsewhere Vitest's default.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: ['default'],
  },
});
