import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_REGION } from '../../../shared/adapters/memory/index.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { flotilla } from './flotilla.ts';

// Where `flotilla plan` plans, run as a user runs it: the region and zones of the snapshot's
// Nodes unless the flags say otherwise, refused when the catalog does not know them; and a
// snapshot that is not one is told so.

const fixtures = path.resolve(import.meta.dirname, '../../fixtures/plan');
const clusterPath = path.join(fixtures, 'cluster.yaml');
const poolsPath = path.join(fixtures, 'nodepools.yaml');
const examples = path.resolve(import.meta.dirname, '../../../examples');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'flotilla-plan-topology-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A copy of the snapshot with every occurrence of `from` replaced (it must occur). */
function snapshot(name: string, from: RegExp, to: string): string {
  const text = fs.readFileSync(clusterPath, 'utf8');
  expect(text).toMatch(from);
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text.replace(from, to));
  return file;
}

const plan = (cluster: string, ...flags: string[]) =>
  flotilla(['plan', '--cluster', cluster, '--nodepools', poolsPath, ...flags]);

describe('flotilla plan: region and zones', () => {
  it("takes the region and zones from the snapshot's Nodes", async () => {
    const run = await plan(clusterPath);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/^Plan for 10 pending pods in us-west-2 \(zones us-west-2a, us-west-2b\),/);
    expect(run.out).toContain("  region from the snapshot's Nodes, zones from the snapshot's Nodes\n");
    expect(run.out).not.toContain('us-west-2c');
  });

  it('takes them from the flags when given', async () => {
    const run = await plan(clusterPath, '--region', 'us-west-2', '--zones', 'a,c');
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/^Plan for 10 pending pods in us-west-2 \(zones us-west-2a, us-west-2c\),/);
    expect(run.out).toContain('  region as given, zones as given\n');
  });

  it('plans in the default region, the one `simulate` uses, when the Nodes carry no region', async () => {
    const bare = snapshot('bare.yaml', /^ +topology\.kubernetes\.io\/(region|zone): .*\n/gm, '');
    const run = await plan(bare);
    expect(run.code).toBe(0);
    expect(DEFAULT_REGION).toBe('us-east-1');
    const steadyWeb = fs.readFileSync(path.join(examples, 'steady-web.yaml'), 'utf8');
    const noRegion = steadyWeb.replace(/^region: .*\n/m, '').replace(/^zones: .*\n/m, '');
    expect(noRegion).not.toMatch(/^region:/m);
    expect(parseScenario(noRegion).region).toBe(DEFAULT_REGION);
    expect(run.out).toMatch(
      /^Plan for 10 pending pods in us-east-1 \(zones us-east-1a, us-east-1b, us-east-1c\),/,
    );
    expect(run.out).toContain('  region by default, zones by default\n');
  });

  it('refuses a region the catalog does not know and zones outside the region, exit 2', async () => {
    const mars = await plan(clusterPath, '--region', 'mars-1');
    expect(mars).toMatchObject({ code: 2, out: '' });
    expect(mars.err).toMatch(
      /^flotilla plan: --region mars-1 is not a region the bundled catalog has prices for; it knows us-east-1, us-west-2\n/,
    );
    const zones = await plan(clusterPath, '--zones', 'x,y');
    expect(zones).toMatchObject({ code: 2, out: '' });
    expect(zones.err).toMatch(
      /^flotilla plan: --zones names us-west-2x, us-west-2y, not zones of us-west-2 \(its zones: us-west-2a, us-west-2b, us-west-2c, us-west-2d\)\n/,
    );
    const east = await plan(clusterPath, '--region', 'us-east-1', '--zones', 'us-west-2a');
    expect(east.code).toBe(2);
    expect(east.err).toMatch(/--zones names us-west-2a, not a zone of us-east-1/);
  });

  it("says when the snapshot's Nodes are in a region the catalog does not know, exit 2 (bad input)", async () => {
    const paris = snapshot('paris.yaml', /us-west-2/g, 'eu-west-3');
    const run = await plan(paris);
    expect(run).toMatchObject({ code: 2, out: '' });
    expect(run.err).toBe(
      "flotilla plan: the snapshot's Nodes are in region eu-west-3, which the bundled catalog has no prices for; it knows us-east-1, us-west-2 (plan with their prices with --region)\n",
    );
  });
});

describe('flotilla plan: a snapshot without Pods or Nodes', () => {
  it('says what the file holds instead of planning for 0 pending pods, exit 2 (bad input)', async () => {
    const deployment = path.join(tmp, 'deployment.yaml');
    fs.writeFileSync(
      deployment,
      `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: shop }
spec:
  replicas: 3
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: web, image: nginx, resources: { requests: { cpu: 500m } } }]
`,
    );
    const run = await plan(deployment);
    expect(run).toMatchObject({ code: 2, out: '' });
    expect(run.err).toContain(
      `${deployment}: no Pod or Node found (it has Deployment 1); the snapshot is what`,
    );
    expect(run.err).not.toMatch(/pending pods/);
  });
});
