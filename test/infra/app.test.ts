import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CLUSTER_SIZE, SHIM_MEMORY_MODEL, shimMemoryFor } from '../../infra/cluster-size.ts';
import { PROJECT_ROOT } from '../../infra/flotilla-cluster.ts';
import { AppUsageError, buildApp } from '../../infra/main.ts';
import { lambdaImportEnv, offlineEnv } from '../fixtures/lambda-env.ts';
import { alarmMetrics, catalogProblems, dashboardMetrics, type TemplateJson } from './dashboard-contract.ts';
import { NO_BUNDLING } from './stacks.ts';

const run = promisify(execFile);

/** An environment with no AWS credentials or profile, so nothing can reach AWS. */
describe('the CDK app', () => {
  it('refuses to build without a clusterName, saying how to pass one', () => {
    expect(() => buildApp({ env: {}, appProps: { context: NO_BUNDLING } })).toThrow(AppUsageError);
    expect(() => buildApp({ env: {}, appProps: { context: NO_BUNDLING } })).toThrow(/-c clusterName=/);
  });

  it('builds one stack named after the cluster, in the account and region of the environment', () => {
    const { app, stack } = buildApp({
      env: { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'eu-west-1' },
      appProps: { context: { ...NO_BUNDLING, clusterName: 'prod_eu' } },
    });
    expect(app.node.children.map((c) => c.node.id)).toEqual(['Flotilla-prod-eu']);
    expect(stack.account).toBe('123456789012');
    expect(stack.region).toBe('eu-west-1');
    expect(stack.flotilla.clusterName).toBe('prod_eu');
  });

  it('sizes the Lambdas and the shim for -c clusterNodes and -c clusterPods, and refuses other than whole numbers', () => {
    const build = (context: Record<string, unknown>) =>
      buildApp({
        env: { CDK_DEFAULT_ACCOUNT: '123456789012', CDK_DEFAULT_REGION: 'us-east-1' },
        appProps: { context: { ...NO_BUNDLING, clusterName: 'big', ...context } },
      });
    const memoryOf = (stack: ReturnType<typeof build>['stack']) =>
      stack.resolve(
        (stack.flotilla.functions['disruption']?.node.defaultChild as { memorySize?: unknown } | undefined)
          ?.memorySize,
      );
    const small = build({});
    const large = build({ clusterNodes: '2000', clusterPods: 30000 });
    expect(Number(memoryOf(large.stack))).toBeGreaterThan(Number(memoryOf(small.stack)));
    // The shim's Deployment in the cluster manifests gets its limit for the size.
    const shimLimit = (stack: ReturnType<typeof build>['stack']) =>
      /limits:\s*\n\s*memory: (\d+)Mi/.exec(stack.flotilla.renderManifests())?.[1];
    expect(shimLimit(large.stack)).toBe(
      String(shimMemoryFor(SHIM_MEMORY_MODEL, { nodes: 2000, pods: 30000 }).limitMiB),
    );
    expect(shimLimit(small.stack)).toBe(
      String(shimMemoryFor(SHIM_MEMORY_MODEL, DEFAULT_CLUSTER_SIZE).limitMiB),
    );
    expect(() => build({ clusterNodes: 'lots' })).toThrow(/clusterNodes "lots" is not a whole number/);
  });

  it('exits 1 with a clear message when run without a clusterName', async () => {
    const result = await run(path.join(PROJECT_ROOT, 'node_modules/.bin/tsx'), ['infra/app.ts'], {
      cwd: PROJECT_ROOT,
      env: offlineEnv(),
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('flotilla: clusterName is not set');
  });
});

describe('cdk synth -c clusterName=test', () => {
  let out: string;
  let log: string;
  beforeAll(async () => {
    out = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-synth-'));
    const { stdout, stderr } = await run(
      path.join(PROJECT_ROOT, 'node_modules/.bin/cdk'),
      ['synth', '-c', 'clusterName=test', '--quiet', '--output', out],
      // Seven Lambda bundles, one after another: on two busy cores they can take past two minutes.
      { cwd: PROJECT_ROOT, env: offlineEnv(), timeout: 300_000 },
    );
    log = stdout + stderr;
  }, 330_000);
  afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

  it('writes the template of one stack, with no cdk-nag violations', () => {
    const template = JSON.parse(fs.readFileSync(path.join(out, 'Flotilla-test.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties?: { Description?: unknown } }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    const described = (prefix: string) =>
      functions.filter((f) => String(JSON.stringify(f.Properties?.Description)).startsWith(`"${prefix}`));
    // catalog, provisioner, interruption, termination, disruption, garbage collector and clean-up.
    expect(described('Flotilla:')).toHaveLength(7);
    // The clean-up's custom resource, whose deletion with the stack runs it.
    expect(
      Object.values(template.Resources).filter((r) => r.Type === 'Custom::FlotillaClusterCleanup'),
    ).toHaveLength(1);
    // And CDK's trigger provider, which invokes the catalog Lambda after a deployment.
    expect(Object.values(template.Resources).filter((r) => r.Type === 'Custom::Trigger')).toHaveLength(1);
    // And CDK's provider that empties the summary bucket before the stack's deletion deletes it.
    expect(
      Object.values(template.Resources).filter((r) => r.Type === 'Custom::S3AutoDeleteObjects'),
    ).toHaveLength(1);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations?: unknown[] }[];
    };
    expect(report.pluginReports.flatMap((r) => r.violations ?? [])).toEqual([]);
  });

  it('bundles every Lambda with local esbuild into ESM modules with source maps that load', async () => {
    for (const fn of ['Catalog', 'Provisioner', 'Interruption', 'Termination', 'Disruption', 'Cleanup']) {
      expect(log).toContain(`Bundling asset Flotilla-test/Flotilla/${fn}Function`);
    }
    expect(log).not.toMatch(/docker/i);
    // The five bundles (the trigger provider's own asset is CDK's, not bundled here).
    const assets = fs
      .readdirSync(out)
      .filter((name) => name.startsWith('asset.'))
      .filter((name) => fs.existsSync(path.join(out, name, 'index.mjs')));
    expect(assets).toHaveLength(7);
    const sizes: Record<string, unknown>[] = [];
    for (const asset of assets) {
      const dir = path.join(out, asset);
      expect(fs.readdirSync(dir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      const bundle = fs.readFileSync(path.join(dir, 'index.mjs'));
      const { stdout: loaded } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          // Module evaluation is the Lambda's initialisation (cold start) apart from the runtime's own.
          'const t = performance.now(); const m = await import(process.argv[1]); process.stdout.write(typeof m.handler + " " + Math.round(performance.now() - t));',
          path.join(dir, 'index.mjs'),
        ],
        { env: lambdaImportEnv('test') },
      );
      const [kind, initMs] = loaded.split(' ');
      expect(kind).toBe('function');
      // The Lambdas reach the API server with their own small client (kube-config.ts, http.ts):
      // @kubernetes/client-node and its dependencies were half of each bundle and of its cold start.
      const sources = (
        JSON.parse(fs.readFileSync(path.join(dir, 'index.mjs.map'), 'utf8')) as { sources: string[] }
      ).sources;
      expect(sources.filter((source) => source.includes('node_modules/@kubernetes/'))).toEqual([]);
      sizes.push({
        bytes: bundle.length,
        gzipBytes: gzipSync(bundle).length,
        initMs: Number(initMs),
        entry:
          sources
            .map((source) => /lambdas\/[a-z-]+\/handler\.ts$/.exec(source)?.[0])
            .find((entry) => entry !== undefined) ?? 'unknown',
      });
    }
    // Measured, not asserted (BENCHMARKS.md): bundle sizes and initialisation times.
    const report = path.join(PROJECT_ROOT, '.cache', 'test-results', 'lambda-bundles.json');
    fs.mkdirSync(path.dirname(report), { recursive: true });
    fs.writeFileSync(report, `${JSON.stringify(sizes, null, 2)}\n`);
    process.stderr.write(`[lambda-bundles] ${JSON.stringify(sizes)}\n`);
  });

  it('writes a dashboard and alarms that name only catalog metrics, with their dimension sets, for this cluster', () => {
    const template = JSON.parse(
      fs.readFileSync(path.join(out, 'Flotilla-test.template.json'), 'utf8'),
    ) as TemplateJson;
    const { metrics, unparsed } = dashboardMetrics(template);
    expect(unparsed).toEqual([]);
    const named = [...metrics, ...alarmMetrics(template)];
    expect(named.filter((m) => m.namespace === 'Flotilla').length).toBeGreaterThan(25);
    expect(catalogProblems(named, 'test')).toEqual([]);
  });

  it('writes the cluster-side manifests next to the template', () => {
    const manifests = fs.readFileSync(path.join(out, 'Flotilla-test.cluster.yaml'), 'utf8');
    expect(manifests).toContain('kind: CustomResourceDefinition');
    expect(manifests).toContain('name: flotilla:controller');
  });
});
