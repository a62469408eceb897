import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ClusterNodeClaim } from '../../shared/ports/cluster.ts';
import { sweepTerminations } from '../../shared/usecases/termination/node-deletion.ts';
import { type TerminationPorts, terminateNodeClaim } from '../../shared/usecases/termination/termination.ts';
import { HarnessError } from './errors.ts';

const nodeClaims = { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' };

/**
 * Removes NodeClaims a controller's own test made through Flotilla's adapter, as Flotilla's
 * identity would (`kubeConfig` must be the controller's): their finalizer is dropped, then they are
 * deleted. Only for the tests of the controllers that own NodeClaims (the Cluster adapter, its
 * contract, the NodeClaim lifecycle); end-to-end tests clean up through terminateThroughFlotilla.
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

/**
 * Deletes the NodeClaims `select` picks and lets Flotilla's termination finish them (drain,
 * TerminateInstances, finalizers), as the termination Lambda would: an end-to-end test's clean-up
 * goes the way a user's uninstall does. Throws when they are not gone within `timeoutMs`: the
 * product failed to clean up.
 */
export async function terminateThroughFlotilla(
  ports: TerminationPorts,
  select: (claim: ClusterNodeClaim) => boolean,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const claims = (await ports.cluster.nodeClaims()).items.filter(select);
    if (claims.length === 0) return;
    for (const claim of claims) if (!claim.deleting) await ports.cluster.deleteNodeClaim(claim.name);
    await sweepTerminations(ports);
    for (const claim of claims) await terminateNodeClaim(ports, claim.name, new Date());
    if (Date.now() > deadline) {
      throw new HarnessError(
        `Flotilla did not finish terminating ${claims.map((c) => c.name).join(', ')} within ${timeoutMs / 1000}s`,
      );
    }
    await sleep(500);
  }
}
