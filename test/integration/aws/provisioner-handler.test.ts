import { beforeAll, describe, expect, it } from 'vitest';
import { kube, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { asLambda, capturingStdout, prepareColdStart } from './lambda-cold-start.ts';

// The provisioner Lambda's real module, as deployed: its cold start discovers the cluster with
// eks:DescribeCluster (moto) and reaches the API server as the flotilla:controller group, and its
// AWS calls are made with its own role, the environment carrying the stack's queues.
describe('provisioner Lambda cold start', () => {
  let server: Moto;
  let handler: (event: unknown, context?: { awsRequestId?: string }) => Promise<unknown>;
  const lines: string[] = [];

  beforeAll(async () => {
    const [motoServer, cube] = await Promise.all([moto(), kube()]);
    server = motoServer;
    await resetMoto(server);
    await prepareColdStart(server, cube.controllerKubeconfigPath);
    await capturingStdout(lines, async () => {
      ({ handler } = await asLambda(
        server,
        'provisioner',
        () => import('../../../lambdas/provisioner/handler.ts'),
      ));
    });
  });

  it('finds the cluster through EKS and runs a scheduled provisioning pass', async () => {
    const discovered = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l['message'] === 'cluster discovered');
    expect(discovered?.['kubernetesVersion']).toBe('1.34');
    const result = (await asLambda(server, 'provisioner', () =>
      handler(
        { version: '0', source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
        { awsRequestId: 'cold-start-1' },
      ),
    )) as { kind: string };
    expect(['skipped', 'provisioned']).toContain(result.kind);
  });
});
