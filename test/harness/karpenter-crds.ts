import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { kube } from './index.ts';
import { flotillaCrds, installCrds, type KarpenterLine, karpenterCrds } from './kube/crds.ts';
import { waitFor } from './proc.ts';

// A test scope (a file or a describe block) whose cluster serves the CRDs of Karpenter's Helm chart
// for a release line instead of Flotilla's: installed before the scope's own set-up, and Flotilla's
// put back after its tear-down (after hooks run in reverse order). Objects stay across the swap, as
// they do when a user installs one chart over the other.

const GROUPS = ['karpenter.sh', 'karpenter.k8s.aws', 'autoscaling.x-k8s.io'];

/** Registers the hooks; call it before the scope's fixtures register theirs. */
export function withKarpenterCrds(line: KarpenterLine): void {
  beforeAll(async () => {
    const { userKubeConfig } = await kube();
    await installCrds(userKubeConfig, await karpenterCrds(line));
    await servedSchema(userKubeConfig, 'karpenter');
  }, 300_000);
  afterAll(async () => {
    const { userKubeConfig } = await kube();
    await installCrds(userKubeConfig, flotillaCrds(), { exclusive: GROUPS });
    await servedSchema(userKubeConfig, 'flotilla');
  }, 120_000);
}

/**
 * Waits until the API server validates NodePools with the schema just installed (it rebuilds a
 * CRD's handler a moment after the update): a capacity type Karpenter does not know is refused at
 * admission by Flotilla's CRD only (Karpenter's controller refuses it later).
 */
async function servedSchema(kubeConfig: KubeConfig, whose: 'karpenter' | 'flotilla'): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const probe = {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'crd-probe' },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'probe' },
          requirements: [{ key: 'karpenter.sh/capacity-type', operator: 'In', values: ['probe'] }],
        },
      },
    },
  };
  await waitFor(
    `the API server to serve ${whose === 'karpenter' ? "Karpenter's" : "Flotilla's"} NodePool schema`,
    async () => {
      const accepted = await custom
        .createClusterCustomObject({
          group: 'karpenter.sh',
          version: 'v1',
          plural: 'nodepools',
          body: probe,
          dryRun: 'All',
        })
        .then(
          () => true,
          () => false,
        );
      return accepted === (whose === 'karpenter') ? true : undefined;
    },
    { timeoutMs: 30_000 },
  );
}
