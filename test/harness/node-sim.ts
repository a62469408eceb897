import { randomUUID } from 'node:crypto';
import {
  type _InstanceType,
  DescribeImagesCommand,
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeInstanceTypesCommand,
  DescribeVolumesCommand,
  type EC2Client,
  type Instance,
  type InstanceTypeInfo,
} from '@aws-sdk/client-ec2';
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  V1MicroTime,
  type V1Node,
  type V1NodeStatus,
  type V1Pod,
} from '@kubernetes/client-node';
import { type KubeletRegistration, parseKubeletRegistration } from './user-data.ts';

export interface NodeSimulatorOptions {
  readonly ec2: EC2Client;
  readonly kubeConfig: KubeConfig;
  /** Instances tagged `kubernetes.io/cluster/<clusterName>=owned` become Nodes. */
  readonly clusterName: string;
  readonly region?: string;
  readonly kubeletVersion?: string;
  /** How long an instance "boots" before its Node registers. @default 0 */
  readonly bootDelayMs?: number;
  /** Fraction of instance memory the OS keeps (kubelet reports the rest). @default 0.05 */
  readonly osMemoryFraction?: number;
  /** @default 200 */
  readonly pollMs?: number;
}

interface Registered {
  readonly nodeName: string;
  readonly instanceId: string;
  leaseRenewedAt: number;
}

const leaseNamespace = 'kube-node-lease';
const leaseSeconds = 40;
const renewEveryMs = 10_000;

/** The conditions kubelet reports True on a running pod. */
export const RUNNING_POD_CONDITIONS = [
  'PodReadyToStartContainers',
  'Initialized',
  'Ready',
  'ContainersReady',
  'PodScheduled',
] as const;

/**
 * Plays the kubelets of a cluster's EC2 instances in moto: every running instance tagged for the
 * cluster registers a Node (providerID `aws:///<zone>/<id>`, well-known labels, capacity and
 * allocatable from its instance type, and the labels, taints, maxPods and reservations its user
 * data asks kubelet for), keeps it Ready by renewing its Lease, and deletes it once the instance
 * stops or terminates. Pods bound to its Nodes become Running; pods being deleted there are
 * confirmed deleted, as kubelet does after their containers stop.
 */
export class NodeSimulator {
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;
  private readonly registered = new Map<string, Registered>();
  private readonly firstSeen = new Map<string, number>();
  private readonly typeInfo = new Map<string, InstanceTypeInfo>();
  private readonly errors: unknown[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private podIpCounter = 0;

  private constructor(private readonly options: NodeSimulatorOptions) {
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.leases = options.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  static start(options: NodeSimulatorOptions): NodeSimulator {
    const simulator = new NodeSimulator(options);
    simulator.schedule();
    return simulator;
  }

  /** Node names by instance id, for the instances registered so far. */
  nodes(): ReadonlyMap<string, string> {
    return new Map([...this.registered.values()].map((r) => [r.instanceId, r.nodeName]));
  }

  /** Errors met while reconciling (each is retried on the next tick). */
  problems(): readonly unknown[] {
    return this.errors;
  }

  /** Runs one reconcile pass now (also what each tick does). */
  async tick(): Promise<void> {
    this.running ??= this.reconcile().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops reconciling and deletes the Nodes it registered. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.all([...this.registered.values()].map((r) => this.deregister(r)));
  }

  private schedule(): void {
    this.timer = setTimeout(async () => {
      await this.tick();
      if (this.timer) this.schedule();
    }, this.options.pollMs ?? 200);
  }

  private async reconcile(): Promise<void> {
    try {
      await this.reconcileInstances();
      await this.reconcilePods();
    } catch (error) {
      this.errors.push(error);
      if (this.errors.length > 50) this.errors.shift();
    }
  }

  private async reconcileInstances(): Promise<void> {
    const instances = await this.clusterInstances();
    const running = new Map(
      instances.filter((i) => i.State?.Name === 'running').map((i) => [i.InstanceId ?? '', i]),
    );
    const now = Date.now();
    for (const [id, instance] of running) {
      if (this.registered.has(id)) continue;
      const seen = this.firstSeen.get(id) ?? now;
      this.firstSeen.set(id, seen);
      if (now - seen < (this.options.bootDelayMs ?? 0)) continue;
      await this.register(instance);
    }
    for (const registration of [...this.registered.values()]) {
      if (!running.has(registration.instanceId)) await this.deregister(registration);
      else if (now - registration.leaseRenewedAt > renewEveryMs) await this.renewLease(registration);
    }
  }

  private async clusterInstances(): Promise<Instance[]> {
    const instances: Instance[] = [];
    let token: string | undefined;
    do {
      const page = await this.options.ec2.send(
        new DescribeInstancesCommand({
          Filters: [{ Name: `tag:kubernetes.io/cluster/${this.options.clusterName}`, Values: ['owned'] }],
          ...(token ? { NextToken: token } : {}),
        }),
      );
      for (const reservation of page.Reservations ?? []) instances.push(...(reservation.Instances ?? []));
      token = page.NextToken;
    } while (token);
    return instances;
  }

  private async register(instance: Instance): Promise<void> {
    const id = instance.InstanceId ?? '';
    const zone = instance.Placement?.AvailabilityZone ?? '';
    const region = this.options.region ?? zone.slice(0, -1);
    const nodeName = region === 'us-east-1' ? `${id}.ec2.internal` : `${id}.${region}.compute.internal`;
    const type = await this.instanceType(instance.InstanceType ?? '');
    const registration = parseKubeletRegistration(await this.userData(id));
    const arch = type.ProcessorInfo?.SupportedArchitectures?.includes('arm64') ? 'arm64' : 'amd64';
    const capacity = await this.capacity(instance, type, registration);
    const allocatable = allocatableOf(capacity, registration, type);
    const os = await this.operatingSystem(instance, registration);
    const now = new Date();
    const node: V1Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: nodeName,
        labels: {
          ...registration.labels,
          'kubernetes.io/hostname': nodeName,
          'kubernetes.io/os': os.name,
          ...(os.windowsBuild === undefined ? {} : { 'node.kubernetes.io/windows-build': os.windowsBuild }),
          'kubernetes.io/arch': arch,
          'node.kubernetes.io/instance-type': instance.InstanceType ?? '',
          'topology.kubernetes.io/zone': zone,
          'topology.kubernetes.io/region': region,
        },
      },
      spec: {
        providerID: `aws:///${zone}/${id}`,
        ...(registration.taints.length > 0 ? { taints: registration.taints.map((t) => ({ ...t })) } : {}),
      },
    };
    let created: V1Node;
    try {
      created = await this.core.createNode({ body: node });
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      created = await this.core.readNode({ name: nodeName });
    }
    const status: V1NodeStatus = {
      capacity: toQuantities(capacity),
      allocatable: toQuantities(allocatable),
      conditions: [
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status', now),
        condition(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory',
          now,
        ),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure', now),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID', now),
      ],
      addresses: [
        { type: 'InternalIP', address: instance.PrivateIpAddress ?? '10.0.0.1' },
        { type: 'Hostname', address: nodeName },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        architecture: arch,
        bootID: randomUUID(),
        containerRuntimeVersion: 'containerd://2.1.0',
        kernelVersion: '6.12.0',
        kubeProxyVersion: '',
        kubeletVersion: this.options.kubeletVersion ?? 'v1.34.4',
        machineID: id,
        operatingSystem: os.name,
        osImage: os.image,
        systemUUID: randomUUID(),
      },
    };
    // Controllers touch a new Node at once (taints, annotations): re-read and retry on conflict.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.core.replaceNodeStatus({ name: nodeName, body: { ...created, status } });
        break;
      } catch (error) {
        if (statusOf(error) !== 409 || attempt >= 5) throw error;
        created = await this.core.readNode({ name: nodeName });
      }
    }
    const entry: Registered = { nodeName, instanceId: id, leaseRenewedAt: 0 };
    this.registered.set(id, entry);
    await this.renewLease(entry);
  }

  private async deregister(registration: Registered): Promise<void> {
    try {
      await this.core.deleteNode({ name: registration.nodeName });
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    this.registered.delete(registration.instanceId);
  }

  private async renewLease(registration: Registered): Promise<void> {
    const now = new V1MicroTime();
    const body = {
      metadata: { name: registration.nodeName, namespace: leaseNamespace },
      spec: { holderIdentity: registration.nodeName, leaseDurationSeconds: leaseSeconds, renewTime: now },
    };
    try {
      const lease = await this.leases.readNamespacedLease({
        name: registration.nodeName,
        namespace: leaseNamespace,
      });
      lease.spec = { ...lease.spec, ...body.spec };
      await this.leases.replaceNamespacedLease({
        name: registration.nodeName,
        namespace: leaseNamespace,
        body: lease,
      });
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      await this.leases.createNamespacedLease({ namespace: leaseNamespace, body });
    }
    registration.leaseRenewedAt = now.getTime();
  }

  private async reconcilePods(): Promise<void> {
    if (this.registered.size === 0) return;
    const nodeNames = new Set([...this.registered.values()].map((r) => r.nodeName));
    const pods = await this.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName!=' });
    for (const pod of pods.items) {
      if (!pod.spec?.nodeName || !nodeNames.has(pod.spec.nodeName)) continue;
      const name = pod.metadata?.name ?? '';
      const namespace = pod.metadata?.namespace ?? 'default';
      try {
        if (pod.metadata?.deletionTimestamp) {
          await this.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
        } else if (pod.status?.phase === 'Pending') {
          await this.core.replaceNamespacedPodStatus({ name, namespace, body: this.runningStatus(pod) });
        }
      } catch (error) {
        // 404: already gone; 409: changed meanwhile, so the next tick sees the new version.
        if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
      }
    }
  }

  private runningStatus(pod: V1Pod): V1Pod {
    const now = new Date();
    this.podIpCounter += 1;
    const podIp = `100.64.${Math.floor(this.podIpCounter / 250) % 250}.${(this.podIpCounter % 250) + 1}`;
    const ready = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
    pod.status = {
      ...pod.status,
      phase: 'Running',
      hostIP: '10.0.0.1',
      podIP: podIp,
      podIPs: [{ ip: podIp }],
      startTime: now,
      conditions: RUNNING_POD_CONDITIONS.map(ready),
      containerStatuses: (pod.spec?.containers ?? []).map((container) => ({
        name: container.name,
        image: container.image ?? '',
        imageID: container.image ?? '',
        containerID: `containerd://${randomUUID().replaceAll('-', '')}`,
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
    };
    return pod;
  }

  private async instanceType(name: string): Promise<InstanceTypeInfo> {
    const cached = this.typeInfo.get(name);
    if (cached) return cached;
    const result = await this.options.ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: [name as _InstanceType] }),
    );
    const info = result.InstanceTypes?.[0];
    if (!info) throw new Error(`moto does not know instance type ${name}`);
    this.typeInfo.set(name, info);
    return info;
  }

  /**
   * The OS the instance runs, as its kubelet reports it: Windows when its user data is a Windows
   * bootstrap (the build from the image's name, as AWS names its Windows images), else Linux.
   */
  private async operatingSystem(
    instance: Instance,
    registration: KubeletRegistration,
  ): Promise<{ name: 'linux' | 'windows'; image: string; windowsBuild?: string }> {
    if (registration.format !== 'windows') {
      const image = {
        bottlerocket: 'Bottlerocket OS',
        'bootstrap.sh': 'Amazon Linux 2',
      }[registration.format as string];
      return { name: 'linux', image: image ?? 'Amazon Linux 2023' };
    }
    const images = await this.options.ec2.send(
      new DescribeImagesCommand({ ImageIds: instance.ImageId ? [instance.ImageId] : [] }),
    );
    const year = /Windows_Server-(\d{4})/.exec(images.Images?.[0]?.Name ?? '')?.[1] ?? '2022';
    const builds: Record<string, string> = {
      '2019': '10.0.17763',
      '2022': '10.0.20348',
      '2025': '10.0.26100',
    };
    return {
      name: 'windows',
      image: `Windows Server ${year} Datacenter`,
      ...(builds[year] === undefined ? {} : { windowsBuild: builds[year] }),
    };
  }

  private async userData(instanceId: string): Promise<string> {
    const result = await this.options.ec2.send(
      new DescribeInstanceAttributeCommand({ InstanceId: instanceId, Attribute: 'userData' }),
    );
    const encoded = result.UserData?.Value;
    return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  }

  private async capacity(
    instance: Instance,
    type: InstanceTypeInfo,
    registration: KubeletRegistration,
  ): Promise<Resources> {
    const vcpus = type.VCpuInfo?.DefaultVCpus ?? 1;
    const memoryMiB = type.MemoryInfo?.SizeInMiB ?? 1024;
    const osFraction = this.options.osMemoryFraction ?? 0.05;
    const network = type.NetworkInfo;
    const eniPods =
      network?.MaximumNetworkInterfaces && network.Ipv4AddressesPerInterface
        ? network.MaximumNetworkInterfaces * (network.Ipv4AddressesPerInterface - 1) + 2
        : 110;
    const gpus = (type.GpuInfo?.Gpus ?? [])
      .filter((gpu) => gpu.Manufacturer?.toUpperCase() === 'NVIDIA')
      .reduce((sum, gpu) => sum + (gpu.Count ?? 0), 0);
    const neurons = (type.NeuronInfo?.NeuronDevices ?? []).reduce(
      (sum, device) => sum + (device.Count ?? 0),
      0,
    );
    return {
      cpu: vcpus * 1000,
      memory: Math.floor(memoryMiB * (1 - osFraction)) * mib,
      'ephemeral-storage': (await this.rootVolumeGiB(instance)) * 1024 * mib,
      pods: registration.maxPods ?? eniPods,
      ...(gpus > 0 ? { 'nvidia.com/gpu': gpus } : {}),
      ...(neurons > 0 ? { 'aws.amazon.com/neuron': neurons } : {}),
    };
  }

  private async rootVolumeGiB(instance: Instance): Promise<number> {
    const root = instance.BlockDeviceMappings?.find((m) => m.DeviceName === instance.RootDeviceName);
    const volumeId = root?.Ebs?.VolumeId;
    if (!volumeId) return 20;
    const volumes = await this.options.ec2.send(new DescribeVolumesCommand({ VolumeIds: [volumeId] }));
    return volumes.Volumes?.[0]?.Size ?? 20;
  }
}

/** Resource amounts in base units: cpu in millicores, memory and storage in bytes, others as counts. */
type Resources = Readonly<Record<string, number>>;

const mib = 1024 * 1024;

/** Capacity minus kube-reserved, system-reserved and the hard eviction thresholds, as kubelet computes it. */
function allocatableOf(
  capacity: Resources,
  registration: KubeletRegistration,
  type: InstanceTypeInfo,
): Resources {
  const pods = capacity['pods'] ?? 110;
  const vcpus = type.VCpuInfo?.DefaultVCpus ?? 1;
  const kubeReserved = registration.kubeReserved ?? {
    cpu: `${eksCpuReserveMillis(vcpus)}m`,
    memory: `${11 * pods + 255}Mi`,
    'ephemeral-storage': '1Gi',
  };
  const evictionHard = registration.evictionHard ?? {
    'memory.available': '100Mi',
    'nodefs.available': '10%',
  };
  const reserved = (resource: string, unit: QuantityUnit) =>
    [kubeReserved[resource], registration.systemReserved?.[resource]]
      .filter((q): q is string => q !== undefined)
      .reduce((sum, q) => sum + quantity(q, unit), 0);
  const memory = capacity['memory'] ?? 0;
  const storage = capacity['ephemeral-storage'] ?? 0;
  return {
    ...capacity,
    cpu: Math.max(0, (capacity['cpu'] ?? 0) - reserved('cpu', { millis: true })),
    memory: Math.max(
      0,
      memory -
        reserved('memory', { of: memory }) -
        quantity(evictionHard['memory.available'] ?? '0', { of: memory }),
    ),
    'ephemeral-storage': Math.max(
      0,
      storage -
        reserved('ephemeral-storage', { of: storage }) -
        quantity(evictionHard['nodefs.available'] ?? '0', { of: storage }),
    ),
  };
}

/** The EKS AMIs' kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest. */
function eksCpuReserveMillis(vcpus: number): number {
  const steps: Array<[number, number]> = [
    [1, 0.06],
    [1, 0.01],
    [2, 0.005],
    [Number.POSITIVE_INFINITY, 0.0025],
  ];
  let left = vcpus;
  let millis = 0;
  for (const [cores, share] of steps) {
    const take = Math.min(left, cores);
    millis += take * 1000 * share;
    left -= take;
    if (left <= 0) break;
  }
  return Math.round(millis);
}

const suffixes: Record<string, number> = {
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  m: 1e-3,
};

/** How to read a quantity: CPU in millicores, or bytes where `N%` is a share of `of`. */
type QuantityUnit = { readonly millis: true } | { readonly of: number };

/** A kubelet quantity ("80m", "1Gi", "10%") in base units. */
function quantity(text: string, unit: QuantityUnit): number {
  if (text.endsWith('%')) return 'of' in unit ? Math.ceil((Number(text.slice(0, -1)) / 100) * unit.of) : 0;
  const match = /^([0-9.]+)([a-zA-Z]*)$/.exec(text);
  if (!match) throw new Error(`not a quantity: ${text}`);
  const value = Number(match[1]) * (suffixes[match[2] ?? ''] ?? 1);
  return Math.round('millis' in unit ? value * 1000 : value);
}

function toQuantities(resources: Resources): Record<string, string> {
  return Object.fromEntries(
    Object.entries(resources).map(([name, amount]) => [
      name,
      name === 'cpu'
        ? `${amount}m`
        : name === 'memory' || name === 'ephemeral-storage'
          ? `${Math.floor(amount / 1024)}Ki`
          : String(amount),
    ]),
  );
}

function condition(type: string, status: string, reason: string, message: string, now: Date) {
  return { type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now };
}

function statusOf(error: unknown): number | undefined {
  return error && typeof error === 'object' && 'code' in error
    ? Number((error as { code: unknown }).code)
    : undefined;
}
