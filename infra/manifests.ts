import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { renderShimObjects, type ShimManifestOptions } from './shim/manifests.ts';
import { NAME_PREFIX, type StackMode } from './stack-mode.ts';

/** The Kubernetes group the Lambdas' EKS access entries map to. */
export const CONTROLLER_GROUP = 'flotilla:controller';

/** The group of a shadow stack's Lambdas, bound to the read-only `SHADOW_CONTROLLER_RULES`. */
export const SHADOW_CONTROLLER_GROUP = 'flotilla-shadow:controller';

/** The cluster-side names a stack of each mode defaults to, apart so that a shadow and a live stack coexist. */
export const CLUSTER_SIDE_DEFAULTS: Readonly<
  Record<
    StackMode,
    { readonly namespace: string; readonly shimServiceAccount: string; readonly controllerGroup: string }
  >
> = {
  live: { namespace: 'flotilla', shimServiceAccount: 'flotilla-shim', controllerGroup: CONTROLLER_GROUP },
  shadow: {
    namespace: 'flotilla-shadow',
    shimServiceAccount: 'flotilla-shadow-shim',
    controllerGroup: SHADOW_CONTROLLER_GROUP,
  },
};

/** Where the Karpenter v1 CRDs live. */
export const CRDS_DIR = path.resolve(import.meta.dirname, 'crds');

export interface ClusterManifestOptions {
  /**
   * `shadow`: no CRDs (the live autoscaler installed them), ClusterRoles named `flotilla-shadow-…`
   * and a controller that only reads (`SHADOW_CONTROLLER_RULES`). @default 'live'
   */
  readonly mode?: StackMode;
  /** Namespace of the shim. @default 'flotilla' ('flotilla-shadow' in shadow mode) */
  readonly namespace?: string;
  /**
   * ServiceAccount of the shim (bound to its Pod Identity role).
   * @default 'flotilla-shim' ('flotilla-shadow-shim' in shadow mode)
   */
  readonly shimServiceAccount?: string;
  /** Group the controller's access entries map to. @default CONTROLLER_GROUP (SHADOW_CONTROLLER_GROUP in shadow mode) */
  readonly controllerGroup?: string;
  /** Folder of CRD YAML files; a shadow stack renders none. @default CRDS_DIR */
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
 * nothing more. No Lambda keeps a watch: each invocation lists what it needs, but for the
 * NodeClaims, which a warm container follows from its last read with a watch of a few seconds
 * (nodeclaim-catch-up.ts). Events are read before
 * they are written because a Lambda keeps no event correlator between invocations: a repeat bumps
 * the count of the existing Event (get, then patch) instead of creating another.
 */
export const CONTROLLER_RULES: readonly Rule[] = [
  // Provisioning reads NodePools; NodePool status is the NodePool controller's (get, then patch);
  // the runaway guard keeps its counters in an annotation (a merge patch of metadata).
  { apiGroups: ['karpenter.sh'], resources: ['nodepools'], verbs: ['get', 'list', 'patch'] },
  { apiGroups: ['karpenter.sh'], resources: ['nodepools/status'], verbs: ['patch'] },
  // NodeClaims: created and launched by the provisioner, registered by the lifecycle, deleted by
  // timeouts, interruption and termination, their finalizer released by termination; watched for a
  // few seconds to catch up with what changed since a warm container's last read.
  {
    apiGroups: ['karpenter.sh'],
    resources: ['nodeclaims'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
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

const READ_VERBS: readonly string[] = ['get', 'list', 'watch'];

/**
 * A shadow stack's controller: the reads of `CONTROLLER_RULES` and nothing else, so that what it
 * decides can never reach the cluster, not even as an Event.
 */
export const SHADOW_CONTROLLER_RULES: readonly Rule[] = CONTROLLER_RULES.flatMap((rule) => {
  const verbs = rule.verbs.filter((verb) => READ_VERBS.includes(verb));
  return verbs.length === 0 ? [] : [{ ...rule, verbs }];
});

/**
 * Renders the cluster side of Flotilla as one YAML stream for a single `kubectl apply -f -`: the
 * namespace, the CRDs (a live stack's only), the shim's ServiceAccount and read-only pod access,
 * the ClusterRole and ClusterRoleBinding of the controller group, and (given `shim`) the shim's
 * ConfigMap and Deployment.
 */
export function renderClusterManifests(options: ClusterManifestOptions = {}): string {
  const mode = options.mode ?? 'live';
  const defaults = CLUSTER_SIDE_DEFAULTS[mode];
  const namespace = options.namespace ?? defaults.namespace;
  const serviceAccount = options.shimServiceAccount ?? defaults.shimServiceAccount;
  const group = options.controllerGroup ?? defaults.controllerGroup;
  const shimRole = `${NAME_PREFIX[mode].kebab}-shim`;
  const controllerRole = `${NAME_PREFIX[mode].kebab}-controller`;
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
      metadata: { name: shimRole, labels },
      // Pods for the pod events; pods, Nodes and NodeClaims for the cluster summary. Read-only.
      rules: [
        { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['list', 'watch'] },
        { apiGroups: ['karpenter.sh'], resources: ['nodeclaims'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: shimRole, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: shimRole },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: controllerRole, labels },
      rules: mode === 'live' ? CONTROLLER_RULES : SHADOW_CONTROLLER_RULES,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: controllerRole, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: controllerRole },
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
  // A shadow runs beside a live autoscaler, whose CRDs (Karpenter's chart's, or a live Flotilla's)
  // are installed; applying its own would take their fields over.
  const crds = mode === 'live' ? crdDocuments(options.crdsDir ?? CRDS_DIR) : [];
  return `${[asDocument(first), ...crds, ...rest.map(asDocument), ...shim].join('\n')}\n`;
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
