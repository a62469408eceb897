import { FlowcontrolApiserverV1Api, type KubeConfig } from '@kubernetes/client-node';

// A kube-apiserver that answers 429 to a share of requests, as a busy cluster does: API Priority
// and Fairness gives the user `flotilla-throttled` (in the flotilla:controller group, so with
// Flotilla's RBAC; its kubeconfig is the cluster's `throttledKubeconfigPath`) a priority level of a
// few seats that rejects what does not fit.

/** The user the throttled kubeconfig authenticates as. */
export const THROTTLED_USER = 'flotilla-throttled';

/**
 * Creates the priority level and flow schema `name` for the throttled user (as an administrator,
 * `kc`); resolves to a function that removes them again.
 */
export async function throttleUser(
  kc: KubeConfig,
  name: string,
  matchingPrecedence: number,
): Promise<() => Promise<void>> {
  const flowcontrol = kc.makeApiClient(FlowcontrolApiserverV1Api);
  await flowcontrol.createPriorityLevelConfiguration({
    body: {
      metadata: { name },
      spec: {
        type: 'Limited',
        limited: { nominalConcurrencyShares: 1, lendablePercent: 0, limitResponse: { type: 'Reject' } },
      },
    },
  });
  await flowcontrol.createFlowSchema({
    body: {
      metadata: { name },
      spec: {
        priorityLevelConfiguration: { name },
        matchingPrecedence,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [{ kind: 'User', user: { name: THROTTLED_USER } }],
            resourceRules: [
              { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
            ],
          },
        ],
      },
    },
  });
  return async () => {
    await flowcontrol.deleteFlowSchema({ name }).catch(() => undefined);
    await flowcontrol.deletePriorityLevelConfiguration({ name }).catch(() => undefined);
  };
}
