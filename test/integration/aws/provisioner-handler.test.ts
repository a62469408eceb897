import { beforeAll, describe, expect, it } from 'vitest';
import { kube, moto, resetMoto } from '../../harness/index.ts';
import { capturingStdout, prepareColdStart } from './lambda-cold-start.ts';

// The provisioner Lambda's real module: its cold start discovers the cluster with
// eks:DescribeCluster (moto) and reaches the API server through a kubeconfig (the harness's).
describe('provisioner Lambda cold start', () => {
  let handler: (event: unknown, context?: { awsRequestId?: string }) => Promise<unknown>;
  const lines: string[] = [];

  beforeAll(async () => {
    const [server, cluster] = await Promise.all([moto(), kube()]);
    await resetMoto(server);
    await prepareColdStart(server, cluster.kubeconfigPath, 'cold-start');
    await capturingStdout(lines, async () => {
      ({ handler } = await import('../../../lambdas/provisioner/handler.ts'));
    });
  });

  it('finds the cluster through EKS and runs a scheduled provisioning pass', async () => {
    const discovered = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['message'] === 'cluster discovered');
    expect(discovered?.['kubernetesVersion']).toBe('1.34');
    const result = (await handler(
      { version: '0', source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
      { awsRequestId: 'cold-start-1' },
    )) as { kind: string };
    expect(['skipped', 'provisioned']).toContain(result.kind);
  });
});
