import type { V1Pod } from '@kubernetes/client-node';
import type { MemoryCluster } from '../adapters/memory/index.ts';
import { toPod } from '../apis/index.ts';
import {
  admitsNodeName,
  firstUntolerated,
  type Labels,
  type Pod,
  Requirements,
  type Taint,
  type Toleration,
} from '../core/index.ts';
import type { ClusterNode } from '../ports/cluster.ts';
import type { ScenarioDaemonSet } from './scenario-types.ts';
import { isActive, rawPods } from './workloads.ts';

// The DaemonSet controller: each DaemonSet has one pod on every node its template selects and
// whose NoSchedule and NoExecute taints it tolerates (with the tolerations the controller adds to
// every DaemonSet pod). The pod names its node as the controller does (required node affinity on
// `metadata.name`), so kube-scheduler binds it there when the node has room. The DaemonSets are
// in the cluster too, where Flotilla's provisioner counts their pods' overhead on new nodes.

/** Tolerations the DaemonSet controller adds to every DaemonSet pod. */
const DAEMON_TOLERATIONS: readonly Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

const DAEMON_LABEL = 'simulator.flotilla.dev/daemonset';

export interface DaemonSets {
  /** Creates the pods nodes lack (one pass over the nodes). */
  step(): Promise<void>;
}

/** Whether a DaemonSet pod belongs on `node`: its selector and node affinity, and the taints. */
function belongsOn(template: Pod, node: { name: string; labels: Labels; taints: readonly Taint[] }): boolean {
  const hard = node.taints.filter((t) => t.effect !== 'PreferNoSchedule');
  if (firstUntolerated(hard, [...(template.tolerations ?? []), ...DAEMON_TOLERATIONS]) !== undefined)
    return false;
  for (const [key, value] of Object.entries(template.nodeSelector ?? {})) {
    if (node.labels[key] !== value) return false;
  }
  const terms =
    template.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined || terms.length === 0) return true;
  return terms.some(
    (term) =>
      admitsNodeName(term, node.name) &&
      Requirements.parse(term.matchExpressions ?? [], {
        object: 'DaemonSet',
        field: 'spec.template.spec.affinity.nodeAffinity',
      }).matchesLabels(node.labels),
  );
}

/** Creates the scenario's DaemonSets in `cluster` and returns their controller. */
export function makeDaemonSets(daemonSets: readonly ScenarioDaemonSet[], cluster: MemoryCluster): DaemonSets {
  const sets = daemonSets.map((d) => {
    const key = `${d.namespace}.${d.name}`;
    const labels = { ...(d.template.metadata?.labels ?? {}), [DAEMON_LABEL]: key };
    const created = cluster.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: d.name, namespace: d.namespace },
      spec: {
        selector: { matchLabels: { [DAEMON_LABEL]: key } },
        template: {
          metadata: {
            labels,
            ...(d.template.metadata?.annotations ? { annotations: d.template.metadata.annotations } : {}),
          },
          spec: d.template.spec,
        },
      },
    }) as { metadata: { uid: string } };
    const template = toPod({
      metadata: { name: d.name, namespace: d.namespace, uid: created.metadata.uid, labels },
      spec: d.template.spec as unknown as V1Pod['spec'],
    } as V1Pod);
    return {
      name: d.name,
      namespace: d.namespace,
      rawSpec: d.template.spec,
      annotations: d.template.metadata?.annotations,
      key,
      labels,
      uid: created.metadata.uid,
      template,
      sequence: 0,
    };
  });

  /** The controller's pod for `nodeName`: its node named by affinity, the controller's tolerations added. */
  function createPod(ds: (typeof sets)[number], nodeName: string): void {
    const spec = structuredClone(ds.rawSpec) as Record<string, unknown>;
    const affinity = (spec['affinity'] ?? {}) as Record<string, unknown>;
    spec['affinity'] = {
      ...affinity,
      nodeAffinity: {
        ...((affinity['nodeAffinity'] ?? {}) as Record<string, unknown>),
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] },
          ],
        },
      },
    };
    spec['tolerations'] = [...((spec['tolerations'] as unknown[] | undefined) ?? []), ...DAEMON_TOLERATIONS];
    cluster.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${ds.name}-${ds.sequence.toString(36).padStart(5, '0')}`,
        namespace: ds.namespace,
        labels: ds.labels,
        ...(ds.annotations === undefined ? {} : { annotations: ds.annotations }),
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'DaemonSet', name: ds.name, uid: ds.uid, controller: true },
        ],
      },
      spec,
    });
  }

  return {
    async step() {
      if (sets.length === 0) return;
      const nodes: ClusterNode[] = (await cluster.nodes()).items.filter((n) => !n.deleting);
      const running = new Set<string>();
      for (const p of rawPods(cluster)) {
        const key = p.metadata?.labels?.[DAEMON_LABEL];
        const term =
          p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
            ?.nodeSelectorTerms?.[0];
        const target = term?.matchFields?.[0]?.values?.[0];
        if (key !== undefined && target !== undefined && isActive(p)) running.add(`${key}/${target}`);
      }
      for (const node of nodes) {
        for (const ds of sets) {
          if (running.has(`${ds.key}/${node.name}`)) continue;
          if (!belongsOn(ds.template, { name: node.name, labels: node.labels, taints: node.taints ?? [] }))
            continue;
          ds.sequence += 1;
          createPod(ds, node.name);
          running.add(`${ds.key}/${node.name}`);
        }
      }
    },
  };
}
