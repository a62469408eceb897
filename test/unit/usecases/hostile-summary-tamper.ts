import fc from 'fast-check';
import { withClusterSummary } from '../../../shared/adapters/summary-cluster.ts';
import {
  encodeSummaryDocument,
  readSummaryDocument,
  SummaryBuilder,
  type SummaryDocument,
} from '../../../shared/apis/index.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import type { ClusterSummary } from '../../../shared/ports/summary.ts';
import { CLUSTER, type World } from './hostile-summary-world.ts';

// Hostile but well-formed cluster summaries: the document an honest shim would publish of a world,
// built with the shim's own SummaryBuilder from the world's raw objects, with one thing in it made
// false — one leaf of one Node, NodeClaim, pod row or pod template set to another well-formed value
// or removed, a field added, an object dropped, duplicated under another name, or a phantom Node
// or NodeClaim added — and read with the Lambdas' own reader behind their summary decorator.

type Json = unknown;
type Path = readonly (string | number)[];

/** Where a tampered field lives: a head object (by name), a pod's row or its template (by pod name). */
export type Part = 'nodes' | 'nodeClaims' | 'podRows' | 'podTemplates';

/** One false thing in a summary. */
export type Tamper =
  | {
      readonly op: 'set';
      readonly part: Part;
      readonly owner: string;
      readonly path: Path;
      readonly value: Json;
    }
  | { readonly op: 'remove'; readonly part: Part; readonly owner: string; readonly path: Path }
  | { readonly op: 'drop'; readonly part: 'nodes' | 'nodeClaims' | 'podRows'; readonly owner: string }
  | { readonly op: 'duplicate'; readonly part: 'nodes' | 'nodeClaims'; readonly owner: string }
  | { readonly op: 'phantomNode'; readonly like: string; readonly cpu: string }
  | { readonly op: 'phantomNodeClaim'; readonly like: string };

/** An instance no one launched. */
export const PHANTOM_PROVIDER_ID = 'aws:///us-east-1a/i-0fffffffffffffff0';

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const nameOf = (o: unknown): string | undefined => {
  const meta = isRecord(o) ? o['metadata'] : undefined;
  return isRecord(meta) && typeof meta['name'] === 'string' ? meta['name'] : undefined;
};

/** The document an honest shim would publish of `world` now, as plain JSON. */
export function honestDocument(world: World): SummaryDocument {
  const copy = (kind: 'Pod' | 'Node' | 'NodeClaim') => structuredClone(world.cluster.list(kind));
  const builder = new SummaryBuilder(CLUSTER);
  builder.replace('pods', copy('Pod'));
  builder.replace('nodes', copy('Node'));
  builder.replace('nodeClaims', copy('NodeClaim'));
  const at = world.clock.now().toISOString();
  return JSON.parse(JSON.stringify(builder.document(at, { pods: at, nodes: at, nodeClaims: at })));
}

function headObject(doc: SummaryDocument, part: 'nodes' | 'nodeClaims', owner: string): Json {
  return (doc.head[part] as Json[]).find((o) => nameOf(o) === owner);
}

function podRow(doc: SummaryDocument, owner: string): Json[] | undefined {
  return (doc.pods.pods as unknown as Json[][]).find((r) => r[1] === owner);
}

/** The object a tamper's path starts from, or undefined when it is not in the document now. */
function root(doc: SummaryDocument, part: Part, owner: string): Json {
  switch (part) {
    case 'nodes':
    case 'nodeClaims':
      return headObject(doc, part, owner);
    case 'podRows':
      return podRow(doc, owner);
    case 'podTemplates': {
      const row = podRow(doc, owner);
      return typeof row?.[0] === 'number' ? doc.pods.podTemplates[row[0]] : undefined;
    }
  }
}

/** Sets (or, with `value` undefined, removes) the field at `path` under `from`, making objects on the way. */
function put(from: Json, path: Path, value: Json | undefined): void {
  let at = from;
  for (const [i, key] of path.entries()) {
    const last = i === path.length - 1;
    if (Array.isArray(at) && typeof key === 'number') {
      if (last) {
        if (value === undefined) at.splice(key, 1);
        else at[key] = value;
        return;
      }
      at = at[key];
    } else if (isRecord(at) && typeof key === 'string') {
      if (last) {
        if (value === undefined) delete at[key];
        else at[key] = value;
        return;
      }
      if (at[key] === undefined || at[key] === null) at[key] = typeof path[i + 1] === 'number' ? [] : {};
      at = at[key];
    } else {
      return;
    }
  }
}

/** `doc` with the tamper applied (in place); what the tamper names and is not there is left alone. */
export function applyTamper(doc: SummaryDocument, tamper: Tamper): void {
  const head = doc.head as unknown as Record<'nodes' | 'nodeClaims', Json[]>;
  switch (tamper.op) {
    case 'set':
    case 'remove': {
      const from = root(doc, tamper.part, tamper.owner);
      if (from !== undefined)
        put(from, tamper.path, tamper.op === 'set' ? structuredClone(tamper.value) : undefined);
      return;
    }
    case 'drop': {
      if (tamper.part === 'podRows') {
        const rows = doc.pods.pods as unknown as Json[][];
        const at = rows.findIndex((r) => r[1] === tamper.owner);
        if (at >= 0) rows.splice(at, 1);
      } else {
        const at = head[tamper.part].findIndex((o) => nameOf(o) === tamper.owner);
        if (at >= 0) head[tamper.part].splice(at, 1);
      }
      return;
    }
    case 'duplicate': {
      const found = headObject(doc, tamper.part, tamper.owner);
      if (found === undefined) return;
      const twin = structuredClone(found) as Record<string, Record<string, unknown>>;
      twin['metadata'] = { ...twin['metadata'], name: `${tamper.owner}-twin`, uid: `twin-${tamper.owner}` };
      head[tamper.part].push(twin);
      return;
    }
    case 'phantomNode': {
      const found = headObject(doc, 'nodes', tamper.like);
      if (found === undefined) return;
      const node = structuredClone(found) as Record<string, Record<string, unknown>>;
      const labels = {
        ...(node['metadata']?.['labels'] as Record<string, string>),
        'kubernetes.io/hostname': 'phantom',
      };
      node['metadata'] = { ...node['metadata'], name: 'phantom', uid: 'uid-phantom', labels };
      node['spec'] = { providerID: PHANTOM_PROVIDER_ID };
      const room = { cpu: tamper.cpu, memory: '100000Gi', pods: '10000' };
      node['status'] = { ...node['status'], capacity: room, allocatable: room };
      head.nodes.push(node);
      return;
    }
    case 'phantomNodeClaim': {
      const found = headObject(doc, 'nodeClaims', tamper.like);
      if (found === undefined) return;
      const claim = structuredClone(found) as Record<string, Record<string, unknown>>;
      claim['metadata'] = { ...claim['metadata'], name: 'phantom-claim', uid: 'uid-phantom-claim' };
      claim['status'] = { ...claim['status'], providerID: PHANTOM_PROVIDER_ID, nodeName: 'phantom' };
      head.nodeClaims.push(claim);
      return;
    }
  }
}

/**
 * The Cluster port of one Lambda over `world`: list reads from a summary published now of the
 * world as it is now, with the forgery's tampers applied (an attacker keeping it false on every
 * publication); single gets and consistent reads from the in-memory API server. With no tampers,
 * the honest summary.
 */
export function summaryClusterOver(
  world: World,
  forgery: readonly Tamper[],
): Cluster & {
  summaryUse(): { fromSummary: number; direct: number };
} {
  const read = async (): Promise<ClusterSummary> => {
    const doc = honestDocument(world);
    for (const tamper of forgery) applyTamper(doc, tamper);
    const counts = doc.head.counts as Record<string, number>;
    counts['nodes'] = doc.head.nodes.length;
    counts['nodeClaims'] = doc.head.nodeClaims.length;
    counts['pods'] = doc.pods.pods.length;
    return readSummaryDocument(encodeSummaryDocument(doc));
  };
  return withClusterSummary(world.cluster, { source: { read }, clock: world.clock, logger: world.logger });
}

// --- generating tampers ------------------------------------------------------------------------

/** A leaf of the honest document (or a field an attacker may add), with the false values it may take. */
interface Leaf {
  readonly part: Part;
  readonly owner: string;
  readonly path: Path;
  readonly values: readonly Json[];
  /** Whether removing it is a tamper (it is there). */
  readonly present: boolean;
}

const TIMES = ['2020-01-01T00:00:00Z', '2099-01-01T00:00:00Z'];

const TIME = /^\d{4}-\d\d-\d\dT/;
const QUANTITY = /^(\d+(?:\.\d+)?)([a-zA-Z]*)$/;

/**
 * False values for a leaf holding `value`: mostly of its own shape (another time, quantity,
 * providerID, condition status, or a value the same field has on another object, or a name), and a
 * few of another shape, which the reader rejects (the object is then unreadable).
 */
function falseValues(
  value: Json,
  sameField: readonly Json[],
  names: readonly string[],
  providerIds: readonly string[],
): Json[] {
  const others = sameField.filter((v) => JSON.stringify(v) !== JSON.stringify(value));
  if (typeof value === 'boolean') return [!value];
  if (typeof value === 'number') return [value * 1000, 0, -1, value + 1, ...others];
  if (value === null) return [...names, ...TIMES, 'Running', 'Succeeded', 'Failed', ...others];
  if (typeof value !== 'string') return [];
  const own: Json[] = [];
  const time = Date.parse(value);
  const quantity = QUANTITY.exec(value);
  if (TIME.test(value) && !Number.isNaN(time)) {
    own.push(
      ...TIMES,
      new Date(time - 365 * 86_400_000).toISOString(),
      new Date(time + 3_600_000).toISOString(),
    );
  } else if (quantity !== null) {
    own.push(`${Number(quantity[1]) * 1000}${quantity[2]}`, '0', '1m', '100000');
  } else if (value.startsWith('aws:///')) {
    own.push(PHANTOM_PROVIDER_ID, ...providerIds);
  } else if (['True', 'False', 'Unknown'].includes(value)) {
    own.push('True', 'False', 'Unknown');
  } else {
    own.push('', 'forged', ...names, 'spot', 'us-east-1b', 'm6i.32xlarge');
  }
  const wellFormed = [...own, ...others].filter((v) => v !== value);
  // One in about five of another shape.
  const foreign = ['forged', TIMES[0], '100000', PHANTOM_PROVIDER_ID].filter(
    (v) => !wellFormed.includes(v) && v !== value,
  );
  return [...new Set([...wellFormed, ...foreign.slice(0, Math.ceil(wellFormed.length / 5))])];
}

function leavesOf(value: Json, path: Path, out: [Path, Json][]): void {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) leavesOf(v, [...path, i], out);
  } else if (isRecord(value)) {
    for (const [k, v] of Object.entries(value)) leavesOf(v, [...path, k], out);
  } else {
    out.push([path, value]);
  }
}

/** Fields a well-formed object may carry that the honest one does not, with false values. */
const ADDED: Readonly<Record<'nodes' | 'nodeClaims' | 'podTemplates', readonly [Path, readonly Json[]][]>> = {
  nodes: [
    [['metadata', 'deletionTimestamp'], TIMES],
    [['metadata', 'annotations', 'karpenter.sh/do-not-disrupt'], ['true']],
    [['spec', 'unschedulable'], [true]],
    [
      ['spec', 'taints', 0],
      [
        { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' },
        { key: 'forged', effect: 'NoExecute' },
      ],
    ],
  ],
  nodeClaims: [
    [['metadata', 'deletionTimestamp'], TIMES],
    [['metadata', 'annotations', 'karpenter.sh/do-not-disrupt'], ['true']],
    [
      ['status', 'conditions', 9],
      [
        { type: 'Drifted', status: 'True', reason: 'NodePoolDrifted', lastTransitionTime: TIMES[0] },
        { type: 'Expired', status: 'True', reason: 'Expired', lastTransitionTime: TIMES[0] },
        { type: 'ConsolidationAllowed', status: 'True', reason: 'x', lastTransitionTime: TIMES[0] },
      ],
    ],
  ],
  podTemplates: [
    [['metadata', 'annotations', 'karpenter.sh/do-not-disrupt'], ['true']],
    [['metadata', 'ownerReferences'], [[]]],
  ],
};

/** Every leaf of the document, and every field of ADDED on every object, with their false values. */
export function leavesOfDocument(doc: SummaryDocument): Leaf[] {
  const nodes = doc.head.nodes.map(nameOf).filter((n): n is string => n !== undefined);
  const claims = doc.head.nodeClaims.map(nameOf).filter((n): n is string => n !== undefined);
  const providerIds = doc.head.nodeClaims.flatMap((c) => {
    const status = isRecord(c) ? c['status'] : undefined;
    return isRecord(status) && typeof status['providerID'] === 'string' ? [status['providerID']] : [];
  });
  const names = [...nodes, ...claims, 'phantom'];
  const out: Leaf[] = [];
  /** Per part and path, the values the field has on each object of the part. */
  const byField = new Map<string, Json[]>();
  const fieldKey = (part: Part, path: Path) => `${part}\u0000${JSON.stringify(path)}`;
  const each = (object: Json, fn: (path: Path, value: Json) => void) => {
    const found: [Path, Json][] = [];
    leavesOf(object, [], found);
    for (const [path, value] of found) fn(path, value);
  };
  const rows = doc.pods.pods as unknown as Json[][];
  const parts: [Part, Json][] = [
    ...doc.head.nodes.map((n): [Part, Json] => ['nodes', n]),
    ...doc.head.nodeClaims.map((c): [Part, Json] => ['nodeClaims', c]),
    ...doc.pods.podTemplates.map((t): [Part, Json] => ['podTemplates', t]),
    ...rows.map((r): [Part, Json] => ['podRows', r]),
  ];
  for (const [part, object] of parts) {
    each(object, (path, value) => {
      const key = fieldKey(part, path);
      byField.set(key, [...(byField.get(key) ?? []), value]);
    });
  }
  const valuesFor = (part: Part, path: Path, value: Json) =>
    falseValues(value, byField.get(fieldKey(part, path)) ?? [], names, providerIds);
  const collect = (part: Part, owner: string, object: Json) => {
    each(object, (path, value) => {
      out.push({ part, owner, path, values: valuesFor(part, path, value), present: true });
    });
    if (part === 'podRows') return;
    for (const [path, values] of ADDED[part]) out.push({ part, owner, path, values, present: false });
  };
  for (const n of doc.head.nodes) collect('nodes', nameOf(n) ?? '', n);
  for (const c of doc.head.nodeClaims) collect('nodeClaims', nameOf(c) ?? '', c);
  const templatesSeen = new Set<number>();
  for (const row of rows) {
    const pod = String(row[1]);
    for (const [i, value] of row.entries()) {
      if (i === 1) continue; // a renamed row is a dropped pod and a phantom one
      const values =
        i === 0
          ? doc.pods.podTemplates.map((_, t) => t).filter((t) => t !== value)
          : valuesFor('podRows', [i], value);
      out.push({ part: 'podRows', owner: pod, path: [i], values, present: true });
    }
    const template = row[0] as number;
    if (!templatesSeen.has(template)) {
      templatesSeen.add(template);
      collect('podTemplates', pod, doc.pods.podTemplates[template]);
    }
  }
  return out.filter((l) => l.values.length > 0 || l.present);
}

/**
 * The fields the use cases decide on (times, annotations, Flotilla's and the scheduling labels,
 * providerIDs, conditions, capacity, taints, a pod's node, phase and requests): drawn five times as
 * often as the rest (the instance-type labels, owners, messages).
 */
const DECIDING =
  /^(metadata\.(creationTimestamp|deletionTimestamp|annotations|name|finalizers)|metadata\.labels\.(karpenter\.sh|node\.kubernetes\.io\/instance-type|topology|kubernetes\.io\/arch)|spec\.(providerID|taints|unschedulable|expireAfter|nodeClassRef|containers)|status\.(providerID|imageID|nodeName|allocatable|capacity|conditions\.\d+\.(type|status|lastTransitionTime))|\d)/;

/**
 * A forgery of `doc`: one to three tampers — a leaf set or removed, a field added, an object
 * dropped, doubled or made up — or a NodeClaim made to look as if its instance were gone (its
 * providerID another's or no one's, and its Node hidden or not Ready).
 */
export function forgeryArbitrary(doc: SummaryDocument): fc.Arbitrary<Tamper[]> {
  const leaves = leavesOfDocument(doc).flatMap((l) =>
    DECIDING.test(l.path.join('.')) ? [l, l, l, l, l] : [l],
  );
  const nodes = doc.head.nodes.map(nameOf).filter((n): n is string => n !== undefined);
  const claims = doc.head.nodeClaims.map(nameOf).filter((n): n is string => n !== undefined);
  const pods = (doc.pods.pods as unknown as Json[][]).map((r) => String(r[1]));
  const providerIds = leavesOfDocument(doc)
    .filter((l) => l.part === 'nodeClaims' && l.path.join('.') === 'status.providerID')
    .flatMap((l) => l.values);
  const nodeOf = new Map(
    doc.head.nodeClaims.map((c) => {
      const status = isRecord(c) ? c['status'] : undefined;
      return [nameOf(c) ?? '', isRecord(status) ? String(status['nodeName']) : ''] as const;
    }),
  );
  const setOrRemove = fc.constantFrom(...leaves).chain((leaf): fc.Arbitrary<Tamper> => {
    const sets = leaf.values.map(
      (value): Tamper => ({ op: 'set', part: leaf.part, owner: leaf.owner, path: leaf.path, value }),
    );
    const removes: Tamper[] = leaf.present
      ? [{ op: 'remove', part: leaf.part, owner: leaf.owner, path: leaf.path }]
      : [];
    return fc.constantFrom(...sets, ...removes);
  });
  const whole = fc.oneof(
    fc.constantFrom(...nodes).map((owner): Tamper => ({ op: 'drop', part: 'nodes', owner })),
    fc.constantFrom(...claims).map((owner): Tamper => ({ op: 'drop', part: 'nodeClaims', owner })),
    fc.constantFrom(...pods).map((owner): Tamper => ({ op: 'drop', part: 'podRows', owner })),
    fc.constantFrom(...nodes).map((owner): Tamper => ({ op: 'duplicate', part: 'nodes', owner })),
    fc.constantFrom(...claims).map((owner): Tamper => ({ op: 'duplicate', part: 'nodeClaims', owner })),
    fc
      .record({ like: fc.constantFrom(...nodes), cpu: fc.constantFrom('100000', '4', '64') })
      .map(({ like, cpu }): Tamper => ({ op: 'phantomNode', like, cpu })),
    fc.constantFrom(...claims).map((like): Tamper => ({ op: 'phantomNodeClaim', like })),
  );
  const gone = fc
    .record({
      claim: fc.constantFrom(...claims),
      providerID: fc.constantFrom(...providerIds),
      hide: fc.constantFrom('drop', 'notReady'),
    })
    .map(({ claim, providerID, hide }): Tamper[] => {
      const node = nodeOf.get(claim) ?? '';
      return [
        { op: 'set', part: 'nodeClaims', owner: claim, path: ['status', 'providerID'], value: providerID },
        hide === 'drop'
          ? { op: 'drop', part: 'nodes', owner: node }
          : {
              op: 'set',
              part: 'nodes',
              owner: node,
              path: ['status', 'conditions', 0, 'status'],
              value: 'False',
            },
      ];
    });
  const one = fc.oneof({ arbitrary: setOrRemove, weight: 6 }, { arbitrary: whole, weight: 1 });
  return fc.oneof(
    { arbitrary: fc.array(one, { minLength: 1, maxLength: 3 }), weight: 9 },
    { arbitrary: gone, weight: 1 },
  );
}
