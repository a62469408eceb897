import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs no servers and runs in parallel; `harness` talks to moto and a real
// Kubernetes control plane started by test/harness/global-setup.ts, one file at a time because the
// servers (and kube-scheduler's view of the Nodes) are shared.
export default defineConfig({
  test: {
    reporters: ['default', ['json', { outputFile: '.cache/test-results/vitest.json' }]],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'],
          sequence: { groupOrder: 0 },
          testTimeout: 30_000,
          // Every core: the unit tests run before the servers start, so they have the machine to
          // themselves (vitest's default leaves one core idle).
          maxWorkers: '100%',
          // Synthesising a stack bundles every Lambda with esbuild inside a beforeAll; on a busy
          // two-core machine that alone can take longer than the 10 s default.
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'harness',
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/harness/**/*.test.ts'],
          globalSetup: ['test/harness/global-setup.ts'],
          // Every AWS call made with a Lambda's credentials is checked against its synthesized policy.
          setupFiles: ['test/harness/iam-check.ts'],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
          maxWorkers: 1,
          testTimeout: 120_000,
          // A cold first run builds the Kubernetes control plane inside a beforeAll.
          hookTimeout: 30 * 60_000,
          env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
        },
      },
    ],
  },
});
