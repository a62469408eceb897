import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { renderShimObjects, type ShimManifestOptions } from './shim/manifests.ts';

/** The Kubernetes group the Lambdas' EKS access entries map to. */
export const CONTROLLER_GROUP = 'flotilla:controller';

/** Where the Karpenter v1 CRDs live. */
export const CRDS_DIR = path.resolve(import.meta.dirname, 'crds');

export interface ClusterManifestOptions {
  /** Namespace of the shim. @default 'flotilla' */
  readonly namespace?: string;
  /** ServiceAccount of the shim (bound to its Pod Identity role). @default 'flotilla-shim' */
  readonly shimServiceAccount?: string;
  /** Group the controller's access entries map to. @default CONTROLLER_GROUP */
  readonly controllerGroup?: string;
  /** Folder of CRD YAML files. @default CRDS_DIR */
  readonly crdsDir?: string;
  /**
   * Where the shim sends pod events and (given `summaryBucket`) publishes the cluster summary.
   * Without it the shim's ConfigMap and Deployment are left out (a comment says why): an
   * environment-agnostic stack does not know its queue's URL or its bucket's name.
   */
  readonly shim?: Omit<ShimManifestOptions, 'namespace' | 'serviceAccount'>;
}

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

/**
 * What the Lambdas call in the cluster (shared/adapters/kube), verb by verb, and
 * nothing more. No Lambda watches: each invocation lists what it needs. Events are read before
 * they are written because a Lambda keeps no event correlator between invocations: a repeat bumps
 * the count of the existing Event (get, then patch) instead of creating another.
 */
export const CONTROLLER_RULES: readonly Rule[] = [
  // Provisioning reads NodePools; NodePool status is the NodePool controller's (get, then patch);
  // the runaway guard keeps its counters in an annotation (a merge patch of metadata).
  { apiGroups: ['karpenter.sh'], resources: ['nodepools'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: ['karpenter.sh'], resources: ['nodepools/status'], verbs: ['patch'] },
  // NodeClaims: created and launched by the provisioner, registered by the lifecycle, deleted by
  // timeouts, interruption and termination, their finalizer released by termination.
  {
    apiGroups: ['karpenter.sh'],
    resources: ['nodeclaims'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  { apiGroups: ['karpenter.sh'], resources: ['nodeclaims/status'], verbs: ['patch'] },
  // EC2NodeClasses: read, their termination finalizer added and released, their status written.
  { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: ['karpenter.k8s.aws'], resources: ['ec2nodeclasses/status'], verbs: ['patch'] },
  // NodeOverlays: listed by every run that plans; their status read and written by the lifecycle.
  { apiGroups: ['karpenter.sh'], resources: ['nodeoverlays'], verbs: ['get', 'list'] },
  { apiGroups: ['karpenter.sh'], resources: ['nodeoverlays/status'], verbs: ['patch'] },
  // Scheduling inputs.
  {
    apiGroups: [''],
    resources: ['pods', 'namespaces', 'persistentvolumes', 'persistentvolumeclaims'],
    verbs: ['list'],
  },
  { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['list'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['list'] },
  // CSINodes: each node's CSI attach limits (spec.drivers[].allocatable.count).
  {
    apiGroups: ['storage.k8s.io'],
    resources: ['storageclasses', 'volumeattachments', 'csinodes'],
    verbs: ['list'],
  },
  // Nodes: registration (labels, taints, finalizer, owner), the drain taint, deletion.
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'patch', 'delete'] },
  // Draining: the Eviction API, and force deletion at the terminationGracePeriod deadline, as
  // Karpenter's terminator does.
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['get', 'create', 'patch'] },
];

/**
 * Renders the cluster side of Flotilla as one YAML stream for a single `kubectl apply -f -`: the
 * namespace, the CRDs, the shim's ServiceAccount and read-only pod access, the ClusterRole and
 * ClusterRoleBinding of the controller group, and (given `shim`) the shim's ConfigMap and
 * Deployment.
 */
export function renderClusterManifests(options: ClusterManifestOptions = {}): string {
  const namespace = options.namespace ?? 'flotilla';
  const serviceAccount = options.shimServiceAccount ?? 'flotilla-shim';
  const group = options.controllerGroup ?? CONTROLLER_GROUP;
  const labels = { 'app.kubernetes.io/part-of': 'flotilla' };
  const objects: unknown[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels } },
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: serviceAccount, namespace, labels },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'flotilla-shim', labels },
      // Pods for the pod events; pods, Nodes and NodeClaims for the cluster summary. Read-only.
      rules: [
        { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['list', 'watch'] },
        { apiGroups: ['karpenter.sh'], resources: ['nodeclaims'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'flotilla-shim', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flotilla-shim' },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'flotilla-controller', labels },
      rules: CONTROLLER_RULES,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'flotilla-controller', labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flotilla-controller' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    },
  ];
  const [first, ...rest] = objects;
  const asDocument = (object: unknown) =>
    `---\n${stringify(object, { aliasDuplicateObjects: false, lineWidth: 0 }).trimEnd()}`;
  const shim = options.shim
    ? renderShimObjects({ ...options.shim, namespace, serviceAccount }).map(asDocument)
    : [
        "# The shim's ConfigMap and Deployment are left out: the stack has no concrete account and region,",
        '# so its pod-event queue URL is unknown. Synthesize with CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION',
        '# set (cdk deploy does), or render them with infra/manifests.ts given the queue URL.',
      ];
  return `${[asDocument(first), ...crdDocuments(options.crdsDir ?? CRDS_DIR), ...rest.map(asDocument), ...shim].join('\n')}\n`;
}

function crdDocuments(dir: string): string[] {
  const files = fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.yaml'))
    .sort();
  if (files.length === 0) throw new Error(`no CRD files (*.yaml) in ${dir}; the cluster manifests need them`);
  // Each file starts with a comment block and then its own `---`; keep the text as it is.
  return files.map((name) => {
    const text = fs.readFileSync(path.join(dir, name), 'utf8').trimEnd();
    return /^---$/m.test(text) ? text : `---\n${text}`;
  });
}
