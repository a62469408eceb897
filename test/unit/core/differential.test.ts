import { describe, expect, it } from 'vitest';
import {
  type ExistingNode,
  type InstanceType,
  Label,
  type LabelSelector,
  type NodePool,
  type NodeSelectorRequirement,
  type Pod,
  type SolveInput,
  type SolveResult,
  solve,
  type Taint,
  type TopologySpreadConstraint,
} from '../../../shared/core/index.ts';
import { fakeInstanceType, node, nodePool, pod, zoneName } from './builders.ts';

// A differential test of the planner against an independent model of Kubernetes' hard scheduling
// rules: random pods (requests, zone and hostname spreads with maxSkew, minDomains and the node
// inclusion policies, required pod affinity and anti-affinity, node selectors, node affinity with
// several terms, tolerations, nil selectors) and existing nodes; the planner's plan is then
// checked rule by rule on the final placement, with code that shares nothing with the planner.

const ZONES = ['a', 'b', 'c'].map(zoneName);
const TYPES: readonly InstanceType[] = [
  fakeInstanceType({ name: 'c.large', cpu: 2, memoryGiB: 4, price: 0.085 }),
  fakeInstanceType({ name: 'm.large', cpu: 2, memoryGiB: 8, price: 0.096 }),
  fakeInstanceType({ name: 'm.xlarge', cpu: 4, memoryGiB: 16, price: 0.192 }),
  fakeInstanceType({ name: 'm.2xlarge', cpu: 8, memoryGiB: 32, price: 0.384 }),
];
const DEDICATED: Taint = { key: 'dedicated', value: 'true', effect: 'NoSchedule' };

/** mulberry32: a small seeded generator, so a failing seed replays exactly. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    chance: (p: number) => next() < p,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T,
    subset: <T>(xs: readonly T[], min: number): T[] => {
      const out = xs.filter(() => next() < 0.5);
      while (out.length < min) {
        const x = xs[Math.floor(next() * xs.length)] as T;
        if (!out.includes(x)) out.push(x);
      }
      return out;
    },
  };
}

const zoneIn = (zones: readonly string[]): NodeSelectorRequirement => ({
  key: Label.zone,
  operator: 'In',
  values: [...zones],
});

/** One random case: NodePools, existing nodes with bound pods, pending pods. */
function generate(seed: number): SolveInput {
  const r = rng(seed);
  const apps = r.int(1, 4);
  const app = (i: number) => `app${i}`;
  const pools: NodePool[] = [
    nodePool({
      name: 'default',
      ...(r.chance(0.3) ? { requirements: [zoneIn(r.subset(ZONES, 2))] } : {}),
    }),
  ];
  if (r.chance(0.5)) {
    pools.push(
      nodePool({
        name: 'dedicated',
        weight: 20,
        taints: [DEDICATED],
        requirements: [zoneIn(r.subset(ZONES, 1))],
      }),
    );
  }
  const nodes: ExistingNode[] = [];
  for (let i = 0, n = r.int(0, 3); i < n; i++) {
    const bound: Pod[] = [];
    for (let j = 0, m = r.int(0, 3); j < m; j++) {
      const label = app(r.int(0, apps - 1));
      const anti = r.chance(0.2);
      bound.push(
        pod({
          name: `bound-${i}-${j}`,
          cpu: '250m',
          memory: '256Mi',
          labels: { app: label },
          ...(anti
            ? {
                affinity: {
                  podAntiAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: [
                      { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: label } } },
                    ],
                  },
                },
              }
            : {}),
        }),
      );
    }
    nodes.push(
      node({
        name: `node-${i}`,
        cpu: '4',
        memory: '16Gi',
        zone: r.pick(['a', 'b', 'c']),
        boundPods: bound,
        ...(r.chance(0.2) ? { taints: [DEDICATED] } : {}),
      }),
    );
  }
  const pending: Pod[] = [];
  for (let i = 0; i < apps; i++) {
    const self: LabelSelector = { matchLabels: { app: app(i) } };
    const spreads: TopologySpreadConstraint[] = [];
    if (r.chance(0.5)) {
      const minDomains = r.pick([undefined, 2, 3]);
      spreads.push({
        maxSkew: r.int(1, 2),
        topologyKey: Label.zone,
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: self,
        ...(minDomains === undefined ? {} : { minDomains }),
        ...(r.chance(0.2) ? { nodeAffinityPolicy: 'Ignore' as const } : {}),
        ...(r.chance(0.2) ? { nodeTaintsPolicy: 'Honor' as const } : {}),
      });
    }
    if (r.chance(0.25)) {
      spreads.push({
        maxSkew: r.int(1, 2),
        topologyKey: Label.hostname,
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: self,
      });
    }
    if (r.chance(0.1))
      spreads.push({ maxSkew: 1, topologyKey: Label.zone, whenUnsatisfiable: 'DoNotSchedule' });
    const anti = [
      ...(r.chance(0.25) ? [{ topologyKey: Label.hostname, labelSelector: self }] : []),
      ...(r.chance(0.1) ? [{ topologyKey: Label.zone, labelSelector: self }] : []),
      ...(r.chance(0.05) ? [{ topologyKey: Label.hostname }] : []),
    ];
    const other = r.int(0, apps - 1);
    const affinity =
      other !== i && r.chance(0.15)
        ? [{ topologyKey: Label.hostname, labelSelector: { matchLabels: { app: app(other) } } }]
        : [];
    const terms = r.chance(0.3)
      ? Array.from({ length: r.int(1, 3) }, () => [zoneIn(r.subset(ZONES, 1).slice(0, 2))])
      : undefined;
    const cpu = r.pick(['100m', '250m', '500m', '1', '1500m']);
    const memory = r.pick(['128Mi', '512Mi', '1Gi', '2Gi']);
    const zone = r.chance(0.15) ? r.pick(['a', 'b', 'c']) : undefined;
    const tolerate = r.chance(0.4);
    for (let k = 0, n = r.int(1, 8); k < n; k++) {
      pending.push(
        pod({
          name: `${app(i)}-${k}`,
          cpu,
          memory,
          labels: { app: app(i) },
          ...(zone === undefined ? {} : { zone }),
          ...(terms === undefined ? {} : { required: terms }),
          ...(spreads.length > 0 ? { spread: spreads } : {}),
          ...(tolerate ? { tolerations: [{ key: DEDICATED.key, operator: 'Exists' as const }] } : {}),
          ...(anti.length > 0 || affinity.length > 0
            ? {
                affinity: {
                  ...(anti.length > 0
                    ? { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: anti } }
                    : {}),
                  ...(affinity.length > 0
                    ? { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: affinity } }
                    : {}),
                },
              }
            : {}),
        }),
      );
    }
  }
  return {
    pods: pending,
    nodePools: pools,
    instanceTypes: new Map([['default', TYPES]]),
    nodes,
    nowMs: 1_700_000_000_000,
  };
}

// ---- the independent model of Kubernetes' rules ------------------------------------------------

/** A node of the final placement: label values it may take (one for a node that exists). */
interface ModelNode {
  readonly name: string;
  readonly labels: ReadonlyMap<string, ReadonlySet<string>>;
  readonly taints: readonly Taint[];
  /** Allocatable of every shape the node may take (a planned NodeClaim: each candidate type). */
  readonly allocatables: readonly Readonly<Record<string, number>>[];
  readonly pods: { readonly pod: Pod; readonly placed: boolean }[];
}

/** A pod's requests as Kubernetes sums them for these pods: containers plus one pod slot. */
function requestsOf(p: Pod): Record<string, number> {
  const out: Record<string, number> = { pods: 1 };
  for (const c of p.containers)
    for (const [k, v] of Object.entries(c.requests ?? {})) out[k] = (out[k] ?? 0) + v;
  return out;
}

function allocatableOf(t: InstanceType): Record<string, number> {
  const out: Record<string, number> = { ...t.capacity };
  for (const list of [t.overhead.kubeReserved, t.overhead.systemReserved, t.overhead.evictionThreshold])
    for (const [k, v] of Object.entries(list)) out[k] = (out[k] ?? 0) - v;
  return out;
}

function selects(selector: LabelSelector | undefined, p: Pod): boolean {
  if (selector === undefined) return false;
  const labels = p.labels ?? {};
  if (Object.entries(selector.matchLabels ?? {}).some(([k, v]) => labels[k] !== v)) return false;
  return (selector.matchExpressions ?? []).every((e) => {
    const v = labels[e.key];
    if (e.operator === 'In') return v !== undefined && (e.values ?? []).includes(v);
    if (e.operator === 'NotIn') return v === undefined || !(e.values ?? []).includes(v);
    return e.operator === 'Exists' ? v !== undefined : v === undefined;
  });
}

/** Whether the node surely satisfies the requirement, whichever of its possible values it takes. */
function surely(n: ModelNode, req: NodeSelectorRequirement): boolean {
  const values = n.labels.get(req.key);
  const wanted = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return values !== undefined && values.size > 0 && [...values].every((v) => wanted.includes(v));
    case 'NotIn':
      return values === undefined || [...values].every((v) => !wanted.includes(v));
    case 'Exists':
      return values !== undefined;
    case 'DoesNotExist':
      return values === undefined;
    default:
      throw new Error(`operator ${req.operator} is not generated`);
  }
}

function nodeAffinityHolds(n: ModelNode, p: Pod): boolean {
  const selector = Object.entries(p.nodeSelector ?? {}).every(([key, v]) =>
    surely(n, { key, operator: 'In', values: [v] }),
  );
  const terms = p.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return (
    selector &&
    (terms === undefined || terms.some((t) => (t.matchExpressions ?? []).every((req) => surely(n, req))))
  );
}

function tolerates(p: Pod, t: Taint): boolean {
  return (p.tolerations ?? []).some(
    (tol) =>
      (tol.key === undefined || tol.key === '' || tol.key === t.key) &&
      (tol.operator === 'Exists' || (tol.value ?? '') === (t.value ?? '')) &&
      (tol.effect === undefined || tol.effect === t.effect),
  );
}

const blocking = (n: ModelNode, p: Pod) =>
  n.taints.filter((t) => t.effect !== 'PreferNoSchedule' && !tolerates(p, t));

/** The node's value for a key: one value, or undefined when it may take several or none. */
function domainOf(n: ModelNode, key: string): string | undefined {
  const values = n.labels.get(key);
  return values !== undefined && values.size === 1 ? [...values][0] : undefined;
}

function mayShareDomain(a: ModelNode, b: ModelNode, key: string): boolean {
  const va = a.labels.get(key);
  const vb = b.labels.get(key);
  return va !== undefined && vb !== undefined && [...va].some((v) => vb.has(v));
}

function buildModel(input: SolveInput, result: SolveResult): ModelNode[] {
  const byName = new Map(TYPES.map((t) => [t.name, t]));
  const pending = new Map(input.pods.map((p) => [p.uid, p]));
  const nodes: ModelNode[] = (input.nodes ?? []).map((n) => ({
    name: n.name,
    labels: new Map(Object.entries(n.labels).map(([k, v]) => [k, new Set([v])])),
    taints: n.taints ?? [],
    allocatables: [n.allocatable],
    pods: n.pods.map((p) => ({ pod: p, placed: false })),
  }));
  const byNode = new Map(nodes.map((n) => [n.name, n]));
  for (const pl of result.placements) {
    if (pl.kind !== 'existingNode') throw new Error('no in-flight NodeClaim is generated');
    byNode.get(pl.nodeName)?.pods.push({ pod: pending.get(pl.pod.uid) as Pod, placed: true });
  }
  for (const c of result.nodeClaims) {
    const labels = new Map<string, Set<string>>([
      [Label.hostname, new Set([c.name])],
      [Label.nodePool, new Set([c.nodePoolName])],
      [Label.zone, new Set(ZONES)],
    ]);
    for (const req of c.requirements) {
      if (req.operator === 'In') labels.set(req.key, new Set(req.values ?? []));
    }
    for (const [k, v] of Object.entries(c.labels)) labels.set(k, new Set([v]));
    nodes.push({
      name: c.name,
      labels,
      taints: c.taints,
      allocatables: c.instanceTypes.map((t) => allocatableOf(byName.get(t.name) as InstanceType)),
      pods: c.pods.map((ref) => ({ pod: pending.get(ref.uid) as Pod, placed: true })),
    });
  }
  return nodes;
}

/** Every hard rule Kubernetes would enforce, checked on the final placement; the violations. */
function violations(input: SolveInput, result: SolveResult): string[] {
  const out: string[] = [];
  const nodes = buildModel(input, result);
  const all = nodes.flatMap((n) => n.pods.map((e) => ({ ...e, node: n })));
  // Every pending pod is placed once or reported unschedulable, never both.
  const seen = new Map<string, number>();
  for (const e of all) if (e.placed) seen.set(e.pod.uid, (seen.get(e.pod.uid) ?? 0) + 1);
  for (const u of result.unschedulable) seen.set(u.pod.uid, (seen.get(u.pod.uid) ?? 0) + 1);
  for (const p of input.pods)
    if (seen.get(p.uid) !== 1) out.push(`${p.name}: placed or reported ${seen.get(p.uid) ?? 0} times`);

  for (const n of nodes) {
    const used: Record<string, number> = {};
    for (const e of n.pods)
      for (const [k, v] of Object.entries(requestsOf(e.pod))) used[k] = (used[k] ?? 0) + v;
    for (const alloc of n.allocatables)
      for (const [k, v] of Object.entries(used))
        if (v > (alloc[k] ?? 0)) out.push(`${n.name}: ${k} ${v} over allocatable ${alloc[k] ?? 0}`);
  }

  for (const { pod: p, node: n, placed } of all) {
    if (!placed) continue;
    const at = `${p.name} on ${n.name}`;
    for (const t of blocking(n, p)) out.push(`${at}: taint ${t.key}:${t.effect} not tolerated`);
    if (!nodeAffinityHolds(n, p)) out.push(`${at}: node selector / required node affinity not met`);

    for (const c of p.topologySpreadConstraints ?? []) {
      if (c.whenUnsatisfiable !== 'DoNotSchedule') continue;
      const eligible = nodes.filter(
        (m) =>
          m.labels.has(c.topologyKey) &&
          ((c.nodeAffinityPolicy ?? 'Honor') === 'Ignore' || nodeAffinityHolds(m, p)) &&
          ((c.nodeTaintsPolicy ?? 'Ignore') === 'Ignore' || blocking(m, p).length === 0),
      );
      const counts = new Map<string, number>();
      for (const m of eligible)
        for (const v of m.labels.get(c.topologyKey) ?? []) counts.set(v, counts.get(v) ?? 0);
      for (const m of eligible) {
        const matching = m.pods.filter(
          (e) => e.pod.namespace === p.namespace && selects(c.labelSelector, e.pod),
        );
        if (matching.length === 0) continue;
        const d = domainOf(m, c.topologyKey);
        if (d === undefined) {
          out.push(`${at}: spread on ${c.topologyKey} counts pods on ${m.name}, whose domain is not decided`);
          continue;
        }
        counts.set(d, (counts.get(d) ?? 0) + matching.length);
      }
      // A node whose domain is not decided yet may take any of its values: the worst counts.
      const values = n.labels.get(c.topologyKey);
      if (values === undefined) {
        out.push(`${at}: spread on ${c.topologyKey}, but the node has no such label`);
        continue;
      }
      const min = c.minDomains !== undefined && counts.size < c.minDomains ? 0 : Math.min(...counts.values());
      const skew = Math.max(...[...values].map((v) => counts.get(v) ?? 0)) - min;
      if (skew > c.maxSkew) out.push(`${at}: spread on ${c.topologyKey} skew ${skew} > maxSkew ${c.maxSkew}`);
    }

    for (const term of p.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) {
      for (const o of all) {
        if (o.pod.uid === p.uid || o.pod.namespace !== p.namespace || !selects(term.labelSelector, o.pod))
          continue;
        if (mayShareDomain(n, o.node, term.topologyKey))
          out.push(`${at}: anti-affinity on ${term.topologyKey} with ${o.pod.name} on ${o.node.name}`);
      }
    }
    // The anti-affinity of pods already there (and of other placed pods) binds this pod too.
    for (const o of all) {
      if (o.pod.uid === p.uid || o.pod.namespace !== p.namespace) continue;
      for (const term of o.pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ??
        []) {
        if (selects(term.labelSelector, p) && mayShareDomain(n, o.node, term.topologyKey))
          out.push(
            `${at}: inside the anti-affinity on ${term.topologyKey} of ${o.pod.name} on ${o.node.name}`,
          );
      }
    }
    for (const term of p.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) {
      const d = domainOf(n, term.topologyKey);
      const met =
        d !== undefined &&
        all.some(
          (o) =>
            o.pod.uid !== p.uid &&
            o.pod.namespace === p.namespace &&
            selects(term.labelSelector, o.pod) &&
            domainOf(o.node, term.topologyKey) === d,
        );
      if (!met) out.push(`${at}: no pod in its ${term.topologyKey} matches its required pod affinity`);
    }
  }
  return out;
}

/** The case and the plan, one line each, short enough to read in a failure message. */
function describeCase(
  seed: number,
  input: SolveInput,
  result: SolveResult,
  found: readonly string[],
): string {
  const spec = (p: Pod) =>
    JSON.stringify({
      nodeSelector: p.nodeSelector,
      affinity: p.affinity,
      tolerations: p.tolerations,
      spread: p.topologySpreadConstraints,
      requests: p.containers[0]?.requests,
    });
  const apps = new Map<string, Pod[]>();
  for (const p of input.pods)
    apps.set(p.labels?.['app'] ?? '', [...(apps.get(p.labels?.['app'] ?? '') ?? []), p]);
  return [
    `seed ${seed}: ${found.length} violations`,
    ...found.map((v) => `  ${v}`),
    ...input.nodePools.map(
      (p) => `nodePool ${p.name} ${JSON.stringify({ requirements: p.requirements, taints: p.taints })}`,
    ),
    ...(input.nodes ?? []).map(
      (n) =>
        `node ${n.name} zone ${n.labels[Label.zone]} taints ${JSON.stringify(n.taints ?? [])} pods ${n.pods
          .map((p) => `${p.name}(${p.labels?.['app']}${p.affinity === undefined ? '' : ', anti-affinity'})`)
          .join(' ')}`,
    ),
    ...[...apps].map(([app, ps]) => `pending ${app} ×${ps.length} ${spec(ps[0] as Pod)}`),
    ...result.nodeClaims.map(
      (c) =>
        `claim ${c.name} ${JSON.stringify(c.requirements.filter((r) => r.key !== Label.instanceType))} ${c.instanceTypes
          .map((t) => t.name)
          .join(',')}: ${c.pods.map((p) => p.name).join(' ')}`,
    ),
    ...result.placements.map(
      (p) => `placed ${p.pod.name} on ${p.kind === 'existingNode' ? p.nodeName : p.nodeClaimName}`,
    ),
    ...result.unschedulable.map((u) => `unschedulable ${u.pod.name}: ${u.message}`),
  ].join('\n');
}

describe('differential: the plan against an independent model of the Kubernetes rules', () => {
  const SEEDS = 400;

  it(`holds every hard constraint over ${SEEDS} random cases`, () => {
    const failures: string[] = [];
    let placed = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const input = generate(seed);
      const result = solve(input);
      placed += input.pods.length - result.unschedulable.length;
      const found = violations(input, result);
      if (found.length > 0) failures.push(describeCase(seed, input, result, found));
    }
    // The first failing case in full, then how many there are.
    expect(failures[0]).toBeUndefined();
    expect(failures).toHaveLength(0);
    // The cases are not all trivially unschedulable.
    expect(placed).toBeGreaterThan(SEEDS * 3);
  });

  it.each([
    [
      'anti-affinity',
      {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { topologyKey: Label.hostname, labelSelector: { matchLabels: { app: 'x' } } },
            ],
          },
        },
      },
    ],
    [
      'spread',
      {
        spread: [
          {
            maxSkew: 1,
            topologyKey: Label.zone,
            whenUnsatisfiable: 'DoNotSchedule' as const,
            labelSelector: { matchLabels: { app: 'x' } },
          },
        ],
      },
    ],
  ])('the model catches a plan that breaks %s', (_what, constraint) => {
    const input: SolveInput = {
      pods: Array.from({ length: 3 }, (_, i) =>
        pod({ name: `x-${i}`, cpu: '100m', labels: { app: 'x' }, ...constraint }),
      ),
      nodePools: [nodePool()],
      instanceTypes: new Map([['default', TYPES]]),
      nowMs: 1_700_000_000_000,
    };
    const result = solve(input);
    expect(violations(input, result)).toEqual([]);
    const [first] = result.nodeClaims;
    expect(result.nodeClaims).toHaveLength(3);
    // Every pod on the first NodeClaim, the others left empty: resources allow it, the rule not.
    const everyPod = result.nodeClaims.flatMap((c) => c.pods);
    const piled: SolveResult = {
      ...result,
      nodeClaims: result.nodeClaims.map((c) => ({ ...c, pods: c === first ? everyPod : [] })),
    };
    expect(violations(input, piled).length).toBeGreaterThan(0);
  });
});
