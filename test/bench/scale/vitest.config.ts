import { defineConfig } from 'vitest/config';

// `npm run bench:scale`: the scale benchmark (test/bench/scale/README.md). Not part of `npm test`:
// the root config includes none of these files. One worker, no file parallelism, hours of timeout:
// it loads the harness's real control plane with thousands of objects per size.
export default defineConfig({
  test: {
    include: ['test/bench/scale/**/*.bench-test.ts'],
    globalSetup: ['test/harness/global-setup.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 6 * 3600_000,
    hookTimeout: 6 * 3600_000,
    reporters: ['default'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
