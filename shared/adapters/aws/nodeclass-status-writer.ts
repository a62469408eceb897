import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { FlotillaError } from '../../core/index.ts';
import type { EC2NodeClassStatus, NodeClassStatusWriter } from '../../ports/cloud.ts';

/** Writing an EC2NodeClass status to the API server failed. */
export class NodeClassStatusWriteError extends FlotillaError {
  readonly code = 'NodeClassStatusWriteFailed';
}

/**
 * Writes EC2NodeClass status through the status subresource with a JSON merge patch (lists are
 * replaced whole, so stale subnets or AMIs disappear).
 */
export function makeNodeClassStatusWriter(kubeConfig: KubeConfig): NodeClassStatusWriter {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  return {
    async write(name, status: EC2NodeClassStatus) {
      try {
        await api.patchClusterCustomObjectStatus(
          { group: 'karpenter.k8s.aws', version: 'v1', plural: 'ec2nodeclasses', name, body: { status } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw new NodeClassStatusWriteError(
          `writing the status of ec2NodeClass "${name}" failed${typeof code === 'number' ? ` with HTTP ${code}` : ''}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}; check that the EC2NodeClass exists and that Flotilla may patch ec2nodeclasses/status`,
          { cause: error },
        );
      }
    },
  };
}
