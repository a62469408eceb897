import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

// Three projects. `unit` needs no servers and runs in parallel. `harness` talks to moto and a real
// Kubernetes control plane, one file at a time because the servers (and kube-scheduler's view of
// the Nodes) are shared: test/harness/global-setup.ts installs and builds them before any file
// runs (only when the run has harness files), and the first test that needs one starts it.
// `harness-soak` holds the one harness file that spends minutes waiting out a fixed window (the
// runaway guard's 5 minutes): it runs in the same group as `unit`, beside the unit tests, which use
// no server, so nothing shares its servers while it runs; the `harness` group starts after both
// and reuses the servers it started.

/** The harness's servers, identities and timeouts, for both projects that use them. */
const harnessTest = {
  globalSetup: ['test/harness/global-setup.ts'],
  // Every AWS call made with a Lambda's credentials is checked against its synthesized policy.
  setupFiles: ['test/harness/iam-check.ts'],
  testTimeout: 120_000,
  // Hooks start the shared servers (seconds: the global setup built them before any file ran),
  // synthesize the stack, and on a first run as root install Chromium with apt-get: a generous
  // limit for a hang on a busy two-core machine, not a measure of speed.
  hookTimeout: 10 * 60_000,
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
};

const soakFiles = ['test/e2e/rogue-taint.test.ts'];

// One worker per core for the unit tests, and one more for the soak file, which mostly sleeps.
// Projects of one group share a worker count; the soak project's name sorts before `unit`, so its
// file takes a worker first.
const firstGroupWorkers = availableParallelism() + 1;

export default defineConfig({
  test: {
    reporters: ['default', ['json', { outputFile: '.cache/test-results/vitest.json' }]],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          sequence: { groupOrder: 0 },
          // The CLI tests run the binary as a user does, and share two cores with the other workers
          // and the soak file's servers: a generous limit for a hang, not a measure of speed.
          testTimeout: 60_000,
          maxWorkers: firstGroupWorkers,
          // Synthesising a stack bundles every Lambda with esbuild inside a beforeAll; on a busy
          // two-core machine that alone can take longer than the 10 s default.
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          ...harnessTest,
          name: 'harness-soak',
          include: soakFiles,
          sequence: { groupOrder: 0 },
          maxWorkers: firstGroupWorkers,
        },
      },
      {
        test: {
          ...harnessTest,
          name: 'harness',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/harness/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...soakFiles],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
    ],
  },
});
