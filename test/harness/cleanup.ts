import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

const nodeClaims = { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' };

/**
 * Deletes NodeClaims a test left behind, first dropping their karpenter.sh/termination
 * finalizer (no termination controller runs in the tests). Ones already gone are fine.
 */
export async function forceDeleteNodeClaims(kubeConfig: KubeConfig, names: readonly string[]): Promise<void> {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const gone = () => undefined;
  for (const name of names) {
    await custom
      .patchClusterCustomObject({ ...nodeClaims, name, body: { metadata: { finalizers: null } } }, mergePatch)
      .catch(gone);
    await custom.deleteClusterCustomObject({ ...nodeClaims, name }).catch(gone);
  }
}
