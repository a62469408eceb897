import type { CoreV1Api } from '@kubernetes/client-node';
import { waitFor } from '../proc.ts';

/**
 * Creates a namespace as a user does and waits for its `default` ServiceAccount (made by
 * kube-controller-manager): pods created there before it exists are refused.
 */
export async function createNamespace(
  core: CoreV1Api,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): Promise<void> {
  await core.createNamespace({ body: { metadata: { name, labels: { ...labels } } } });
  await waitFor(
    `the default ServiceAccount of namespace ${name}`,
    async () => (await core.readNamespacedServiceAccount({ namespace: name, name: 'default' })) && true,
    { timeoutMs: 30_000 },
  );
}
