import { RUNNING_POD_CONDITIONS } from '../../harness/node-sim.ts';
import type { PlannedDaemonSet, PlannedWorkload } from './plan.ts';
import { Random } from './random.ts';

// The Kubernetes objects of the loaded cluster, shaped as real ones: Deployment pods with two
// containers, ~30 env vars, probes, volumes and what kubelet reports for them; DaemonSet pods with
// the node affinity the DaemonSet controller sets; Nodes with the images, addresses and nodeInfo an
// EKS kubelet reports. Image names carry no registry host.

type Json = Record<string, unknown>;

const MiB = 2 ** 20;

function cpu(millis: number): string {
  return millis % 1000 === 0 ? String(millis / 1000) : `${millis}m`;
}

function memory(bytes: number): string {
  return bytes % (1024 * MiB) === 0 ? `${bytes / (1024 * MiB)}Gi` : `${Math.round(bytes / MiB)}Mi`;
}

/** The labels a ReplicaSet's pods carry (its selector is `app` and `pod-template-hash`). */
export function workloadLabels(w: PlannedWorkload): Record<string, string> {
  const component = w.app.slice(w.team.length + 1);
  return {
    app: w.app,
    'app.kubernetes.io/name': w.app,
    'app.kubernetes.io/instance': `${w.app}-production`,
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': w.team,
    'app.kubernetes.io/version': workloadVersion(w),
    'pod-template-hash': w.hash,
    team: w.team,
    version: workloadVersion(w),
  };
}

function workloadVersion(w: PlannedWorkload): string {
  return `2026.${(w.seed % 11) + 1}.${w.seed % 29}-${(w.seed % 0xfffff).toString(16).padStart(5, '0')}`;
}

/** The pod template of a workload's ReplicaSet (and, with name and node, each of its pods). */
export function workloadTemplate(w: PlannedWorkload): { metadata: Json; spec: Json } {
  const random = new Random(w.seed);
  const version = workloadVersion(w);
  const labels = workloadLabels(w);
  const limitCpu = w.cpuMillis * 2;
  const env: Json[] = [
    { name: 'SERVICE_NAME', value: w.app },
    { name: 'TEAM', value: w.team },
    { name: 'ENVIRONMENT', value: 'production' },
    { name: 'AWS_REGION', value: 'us-east-1' },
    { name: 'LOG_LEVEL', value: 'info' },
    { name: 'LOG_FORMAT', value: 'json' },
    { name: 'HTTP_PORT', value: '8080' },
    { name: 'METRICS_PORT', value: '9090' },
    {
      name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      value: 'http://otel-collector.observability.svc.cluster.local:4317',
    },
    { name: 'OTEL_SERVICE_NAME', value: w.app },
    { name: 'JAVA_TOOL_OPTIONS', value: '-XX:MaxRAMPercentage=75.0 -XX:+ExitOnOutOfMemoryError' },
    { name: 'DATABASE_HOST', value: `${w.team}-primary.db.internal` },
    { name: 'DATABASE_NAME', value: w.app.replaceAll('-', '_') },
    {
      name: 'DATABASE_PASSWORD',
      valueFrom: { secretKeyRef: { name: `${w.app}-db-credentials`, key: 'password' } },
    },
    { name: 'REDIS_URL', value: `redis://${w.team}-cache.${w.namespace}.svc.cluster.local:6379/0` },
    { name: 'KAFKA_BROKERS', value: 'kafka-0.kafka.data:9092,kafka-1.kafka.data:9092' },
    { name: 'FEATURE_FLAGS', value: `async-writes=true,shadow-reads=${random.next() < 0.3}` },
    { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
    { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
    { name: 'NODE_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
    {
      name: 'CPU_LIMIT',
      valueFrom: { resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1' } },
    },
  ];
  const sidecarEnv: Json[] = [
    { name: 'ENVOY_UID', value: '1337' },
    { name: 'SERVICE_CLUSTER', value: `${w.namespace}/${w.app}` },
    { name: 'ENVOY_ADMIN_PORT', value: '15000' },
    { name: 'ENVOY_LOG_LEVEL', value: 'warning' },
    { name: 'XDS_ADDRESS', value: 'control-plane.mesh-system.svc.cluster.local:15012' },
    { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } },
    { name: 'INSTANCE_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
  ];
  const probe = (path: string, port: number, initial: number) => ({
    httpGet: { path, port, scheme: 'HTTP' },
    initialDelaySeconds: initial,
    periodSeconds: 10,
    timeoutSeconds: 2,
    successThreshold: 1,
    failureThreshold: 3,
  });
  const containerSecurity = {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  };
  return {
    metadata: {
      labels,
      annotations: {
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
        'prometheus.io/path': '/metrics',
        'kubectl.kubernetes.io/restartedAt': `2026-11-${String((w.seed % 20) + 1).padStart(2, '0')}T09:14:03Z`,
        'checksum/config': random.hex(64),
        'checksum/secret': random.hex(64),
      },
    },
    spec: {
      serviceAccountName: 'default',
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 60,
      dnsPolicy: 'ClusterFirst',
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 10001,
        runAsGroup: 10001,
        fsGroup: 10001,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      affinity: {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                labelSelector: { matchLabels: { app: w.app } },
                topologyKey: 'kubernetes.io/hostname',
              },
            },
          ],
        },
      },
      containers: [
        {
          name: 'app',
          image: `internal-images/${w.team}/${w.app}:${version}`,
          imagePullPolicy: 'IfNotPresent',
          command: ['/app/bin/server'],
          args: ['--config=/etc/app/config.yaml', '--http-port=8080', '--metrics-port=9090'],
          ports: [
            { name: 'http', containerPort: 8080, protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
          ],
          env,
          resources: {
            requests: { cpu: cpu(w.cpuMillis), memory: memory(w.memoryBytes) },
            limits: { cpu: cpu(limitCpu), memory: memory(w.memoryBytes) },
          },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/app', readOnly: true },
            { name: 'secrets', mountPath: '/etc/app/secrets', readOnly: true },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'cache', mountPath: '/var/cache/app' },
          ],
          livenessProbe: probe('/healthz', 8080, 20),
          readinessProbe: probe('/ready', 8080, 5),
          securityContext: containerSecurity,
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
        {
          name: 'proxy',
          image: 'internal-images/platform/mesh-proxy:v1.31.4-distroless',
          imagePullPolicy: 'IfNotPresent',
          args: [
            'proxy',
            'sidecar',
            '--domain',
            `${w.namespace}.svc.cluster.local`,
            '--log_output_level=default:warn',
          ],
          ports: [{ name: 'http-envoy-prom', containerPort: 15090, protocol: 'TCP' }],
          env: sidecarEnv,
          resources: {
            requests: { cpu: '10m', memory: '40Mi' },
            limits: { cpu: '1', memory: '256Mi' },
          },
          volumeMounts: [
            { name: 'tmp', mountPath: '/etc/proxy/tmp' },
            { name: 'proxy-certs', mountPath: '/etc/proxy/certs', readOnly: true },
          ],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: `${w.app}-config`, defaultMode: 420 } },
        { name: 'secrets', secret: { secretName: `${w.app}-secrets`, defaultMode: 288 } },
        { name: 'tmp', emptyDir: {} },
        { name: 'cache', emptyDir: { sizeLimit: '1Gi' } },
        { name: 'proxy-certs', secret: { secretName: 'mesh-proxy-certs', defaultMode: 288, optional: true } },
      ],
    },
  };
}

export function replicaSetObject(w: PlannedWorkload, template: { metadata: Json; spec: Json }): Json {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: {
      name: `${w.app}-${w.hash}`,
      namespace: w.namespace,
      labels: template.metadata['labels'],
      annotations: {
        'deployment.kubernetes.io/desired-replicas': String(w.replicas),
        'deployment.kubernetes.io/max-replicas': String(w.replicas + Math.ceil(w.replicas / 4)),
        'deployment.kubernetes.io/revision': String((w.seed % 40) + 1),
      },
    },
    spec: {
      replicas: w.replicas,
      selector: { matchLabels: { app: w.app, 'pod-template-hash': w.hash } },
      template,
    },
  };
}

export function pdbObject(w: PlannedWorkload): Json {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: w.app, namespace: w.namespace, labels: { app: w.app, team: w.team } },
    spec: { selector: { matchLabels: { app: w.app } }, ...w.pdb },
  };
}

/** A Deployment pod as the ReplicaSet controller creates it, bound to `nodeName`. */
export function workloadPod(
  template: { metadata: Json; spec: Json },
  w: PlannedWorkload,
  name: string,
  replicaSetUid: string,
  nodeName: string,
): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: w.namespace,
      labels: template.metadata['labels'],
      annotations: template.metadata['annotations'],
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${w.app}-${w.hash}`,
          uid: replicaSetUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...template.spec, nodeName },
  };
}

/** The labels of a DaemonSet's pods. */
function daemonLabels(ds: PlannedDaemonSet): Record<string, string> {
  return {
    'app.kubernetes.io/name': ds.name,
    'app.kubernetes.io/instance': ds.name,
    'app.kubernetes.io/part-of': 'platform',
    'k8s-app': ds.name,
  };
}

function daemonTemplate(ds: PlannedDaemonSet): { metadata: Json; spec: Json } {
  const network = ds.name === 'node-network-agent';
  return {
    metadata: {
      labels: daemonLabels(ds),
      annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': network ? '61678' : '2020' },
    },
    spec: {
      serviceAccountName: 'default',
      priorityClassName: 'system-node-critical',
      hostNetwork: network,
      dnsPolicy: network ? 'ClusterFirstWithHostNet' : 'ClusterFirst',
      terminationGracePeriodSeconds: 10,
      tolerations: [{ operator: 'Exists' }],
      containers: [
        {
          name: ds.name,
          image: network
            ? 'internal-images/platform/node-network-agent:v1.20.4-eksbuild.2'
            : 'internal-images/platform/log-shipper:4.1.1-debug-distroless',
          imagePullPolicy: 'IfNotPresent',
          env: [
            { name: 'NODE_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
            { name: 'CLUSTER_NAME', value: 'test-cluster' },
            { name: 'AWS_REGION', value: 'us-east-1' },
            { name: 'LOG_LEVEL', value: 'info' },
          ],
          resources: {
            requests: { cpu: cpu(ds.cpuMillis), memory: memory(ds.memoryBytes) },
            limits: { memory: memory(ds.memoryBytes * 2) },
          },
          volumeMounts: [
            { name: 'host-var-log', mountPath: '/var/log', readOnly: !network },
            { name: 'host-run', mountPath: '/run/host' },
          ],
          securityContext: network ? { privileged: true } : { readOnlyRootFilesystem: true },
          livenessProbe: {
            exec: { command: ['/app/healthcheck', '-liveness'] },
            initialDelaySeconds: 60,
            periodSeconds: 10,
            timeoutSeconds: 10,
            successThreshold: 1,
            failureThreshold: 3,
          },
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
      volumes: [
        { name: 'host-var-log', hostPath: { path: '/var/log', type: 'DirectoryOrCreate' } },
        { name: 'host-run', hostPath: { path: '/run', type: 'Directory' } },
      ],
    },
  };
}

export function daemonSetObject(ds: PlannedDaemonSet): Json {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: ds.name, namespace: ds.namespace, labels: daemonLabels(ds) },
    spec: {
      selector: { matchLabels: { 'k8s-app': ds.name } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%' } },
      template: daemonTemplate(ds),
    },
  };
}

/**
 * A DaemonSet pod as its controller creates it: owned by the DaemonSet, pinned to its node by
 * the `metadata.name` node affinity, with the controller's revision labels and tolerations.
 */
export function daemonPod(
  ds: PlannedDaemonSet,
  daemonSetUid: string,
  revisionHash: string,
  name: string,
  nodeName: string,
): Json {
  const template = daemonTemplate(ds);
  const tolerate = (key: string, effect: string) => ({ key, operator: 'Exists', effect });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: ds.namespace,
      labels: {
        ...daemonLabels(ds),
        'controller-revision-hash': revisionHash,
        'pod-template-generation': '1',
      },
      annotations: template.metadata['annotations'],
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          name: ds.name,
          uid: daemonSetUid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      ...template.spec,
      nodeName,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] },
            ],
          },
        },
      },
      tolerations: [
        { operator: 'Exists' },
        tolerate('node.kubernetes.io/not-ready', 'NoExecute'),
        tolerate('node.kubernetes.io/unreachable', 'NoExecute'),
        tolerate('node.kubernetes.io/disk-pressure', 'NoSchedule'),
        tolerate('node.kubernetes.io/memory-pressure', 'NoSchedule'),
        tolerate('node.kubernetes.io/pid-pressure', 'NoSchedule'),
        tolerate('node.kubernetes.io/unschedulable', 'NoSchedule'),
        ...(template.spec['hostNetwork']
          ? [tolerate('node.kubernetes.io/network-unavailable', 'NoSchedule')]
          : []),
      ],
    },
  };
}

/** What kubelet reports for a running pod (the status subresource). */
export function runningPodStatus(
  pod: Json,
  random: Random,
  hostIp: string,
  podIp: string,
  startedAt: string,
): Json {
  const spec = pod['spec'] as { containers: Json[] };
  const ready = (type: string) => ({
    type,
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: startedAt,
  });
  return {
    status: {
      phase: 'Running',
      conditions: RUNNING_POD_CONDITIONS.map(ready),
      hostIP: hostIp,
      hostIPs: [{ ip: hostIp }],
      podIP: podIp,
      podIPs: [{ ip: podIp }],
      startTime: startedAt,
      containerStatuses: spec.containers.map((c) => {
        const resources = c['resources'] as { requests?: Json; limits?: Json };
        const image = String(c['image']);
        return {
          name: c['name'],
          state: { running: { startedAt } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image,
          imageID: `${image.split(':')[0]}@sha256:${random.hex(64)}`,
          containerID: `containerd://${random.hex(64)}`,
          started: true,
          resources,
          volumeMounts: ((c['volumeMounts'] as Json[] | undefined) ?? []).map((m) => ({
            name: m['name'],
            mountPath: m['mountPath'],
            ...(m['readOnly'] ? { readOnly: true, recursiveReadOnly: 'Disabled' } : {}),
          })),
        };
      }),
    },
  };
}

/** A Node as an EKS kubelet registers it (before Flotilla's registration sync). */
export function nodeObject(options: {
  readonly name: string;
  readonly instanceId: string;
  readonly zone: string;
  readonly ip: string;
  readonly instanceType: string;
  readonly arch: string;
  /** The labels Flotilla's user data passes to kubelet (`--node-labels`): the NodeClaim's. */
  readonly labels: Record<string, string>;
}): Json {
  const region = options.zone.slice(0, -1);
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: options.name,
      labels: {
        ...options.labels,
        'beta.kubernetes.io/arch': options.arch,
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/instance-type': options.instanceType,
        'failure-domain.beta.kubernetes.io/region': region,
        'failure-domain.beta.kubernetes.io/zone': options.zone,
        'kubernetes.io/arch': options.arch,
        'kubernetes.io/hostname': options.name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': options.instanceType,
        'topology.kubernetes.io/region': region,
        'topology.kubernetes.io/zone': options.zone,
        'topology.k8s.aws/zone-id': `use1-az${options.zone.endsWith('a') ? 1 : options.zone.endsWith('b') ? 2 : 4}`,
        'k8s.io/cloud-provider-aws': 'a94967527effcefb5f5829f529c0a1b9',
      },
      annotations: {
        'alpha.kubernetes.io/provided-node-ip': options.ip,
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        'csi.volume.kubernetes.io/nodeid': JSON.stringify({ 'ebs.csi.aws.com': options.instanceId }),
      },
    },
    spec: {
      providerID: `aws:///${options.zone}/${options.instanceId}`,
      taints: [{ key: 'karpenter.sh/unregistered', effect: 'NoExecute' }],
    },
  };
}

const NODE_IMAGES: readonly (readonly [string, number])[] = [
  ['internal-images/platform/node-network-agent:v1.20.4-eksbuild.2', 68_211_452],
  ['internal-images/platform/node-network-agent-init:v1.20.4-eksbuild.2', 61_943_116],
  ['internal-images/platform/kube-proxy:v1.34.2-minimal-eksbuild.4', 31_112_785],
  ['internal-images/platform/coredns:v1.12.4-eksbuild.1', 24_557_120],
  ['internal-images/platform/log-shipper:4.1.1-debug-distroless', 109_884_001],
  ['internal-images/platform/mesh-proxy:v1.31.4-distroless', 92_331_007],
  ['internal-images/platform/ebs-csi-node:v1.49.0-eksbuild.1', 41_992_310],
  ['internal-images/platform/csi-node-driver-registrar:v2.14.0-eks-1-34-4', 9_114_582],
  ['internal-images/platform/livenessprobe:v2.16.0-eks-1-34-4', 8_992_611],
  ['internal-images/platform/pod-identity-agent:0.1.33', 12_554_900],
  ['internal-images/platform/metrics-node-exporter:v1.10.2', 11_223_456],
  ['internal-images/platform/pause:3.10', 311_285],
];

/** What kubelet reports: capacity, conditions, addresses, nodeInfo and the images it holds. */
export function nodeStatus(options: {
  readonly name: string;
  readonly instanceId: string;
  readonly ip: string;
  readonly arch: string;
  readonly capacity: Record<string, string>;
  readonly allocatable: Record<string, string>;
  readonly now: string;
  readonly random: Random;
  /** Workload images whose layers this node pulled. */
  readonly workloadImages: readonly string[];
}): Json {
  const { random, now } = options;
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
    reason,
    message,
  });
  const images = [
    ...NODE_IMAGES.map(([name, size]) => ({ name, size })),
    ...options.workloadImages.map((name) => ({ name, size: random.int(40_000_000, 900_000_000) })),
  ]
    .slice(0, 40)
    .map(({ name, size }) => ({
      names: [`${name.split(':')[0]}@sha256:${random.hex(64)}`, name],
      sizeBytes: size,
    }));
  return {
    status: {
      capacity: options.capacity,
      allocatable: options.allocatable,
      conditions: [
        condition(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: options.ip },
        { type: 'InternalDNS', address: options.name },
        { type: 'Hostname', address: options.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: random.hex(32),
        systemUUID: `ec2${random.hex(5)}-${random.hex(4)}-${random.hex(4)}-${random.hex(4)}-${random.hex(12)}`,
        bootID: random.uuid(),
        kernelVersion: '6.12.46-66.121.amzn2023.x86_64',
        osImage: 'Amazon Linux 2023.9.20251110',
        containerRuntimeVersion: 'containerd://2.1.4',
        kubeletVersion: 'v1.34.2-eks-b3126f4',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: options.arch,
      },
      images,
      runtimeHandlers: [
        { name: 'nvidia', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
        { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
        { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
      ],
      features: { supplementalGroupsPolicy: true },
    },
  };
}
