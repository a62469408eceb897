import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

// Three projects. `unit` needs no servers and runs in parallel. `harness` talks to moto and a real
// Kubernetes control plane: test/harness/global-setup.ts installs and builds them before any file
// runs (only when the run has harness files), and the first test of a worker that needs one starts
// that worker's own (services.ts), so two harness files that run at once never share servers (or
// kube-scheduler's view of the Nodes); the files of one worker reuse its servers one after another.
// `harness-soak` holds the harness files that spend minutes waiting out fixed windows (the runaway
// guard's 5 minutes, a shim's watches kept quiet and then late for minutes) and use little CPU
// meanwhile: they run in the same group as `unit`, beside the unit tests, which use no server; the
// `harness` group starts after both.

/** The harness's servers, identities and timeouts, for both projects that use them. */
const harnessTest = {
  globalSetup: ['test/harness/global-setup.ts'],
  // Every AWS call made with a Lambda's credentials is checked against its synthesized policy.
  setupFiles: ['test/harness/fresh-modules.ts', 'test/harness/iam-check.ts'],
  testTimeout: 120_000,
  // Hooks start the shared servers (seconds: the global setup built them before any file ran),
  // synthesize the stack, and on a first run as root install Chromium with apt-get: a generous
  // limit for a hang on a busy two-core machine, not a measure of speed.
  hookTimeout: 10 * 60_000,
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
};

const soakFiles = ['test/e2e/rogue-taint.test.ts', 'test/integration/shim-watch-behind.test.ts'];

// One worker per core for the unit tests, and one more for each soak file, which mostly sleeps.
// Projects of one group share a worker count; the soak project's name sorts before `unit`, so its
// files take their workers first.
const firstGroupWorkers = availableParallelism() + soakFiles.length;

export default defineConfig({
  test: {
    reporters: ['default', ['json', { outputFile: '.cache/test-results/vitest.json' }]],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          sequence: { groupOrder: 0 },
          // A worker imports the product once and runs its files one after another in it: no unit
          // test mocks a module or leaves global state behind, and importing the product again for
          // each of ~200 files cost more CPU than the tests themselves.
          isolate: false,
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
          // Two files at a time, each worker with its own servers: most of a harness file's time
          // is spent waiting on the controllers' clocks, not on the two cores.
          maxWorkers: 2,
          // A worker runs its files one after another in one process, each with the project's
          // modules evaluated afresh (fresh-modules.ts): a process and the SDK's and the
          // Kubernetes client's loading per file cost more CPU than most files' tests.
          isolate: false,
        },
      },
    ],
  },
});
