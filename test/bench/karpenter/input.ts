// The scheduling benchmark's input as JSON for the Karpenter side-by-side harness (main.go beside
// this file): the instance types (labels, capacity, overhead, offerings), the NodePool's capacity
// types and limits, and the pods' requests, with cpu in millicores and everything else in base
// units. Only the plain-requests mix: its pods carry nothing but requests and labels.
// Usage: tsx test/bench/karpenter/input.ts <pods> <typeSet>; prints one JSON document.
import { computePodRequests } from '../../../shared/core/pod.ts';
import { benchInput, loadInstanceTypes, type TypeSet } from '../workloads.ts';

const [podsArg, typeSet] = process.argv.slice(2) as [string, TypeSet];
const types = loadInstanceTypes(typeSet);
const input = benchInput('plain-requests', Number(podsArg), types);
const pool = input.nodePools[0];
const capacityTypes = pool?.requirements?.find((r) => r.key === 'karpenter.sh/capacity-type')?.values ?? [];

/** Quantities as Kubernetes writes them: millicores for cpu, base units for the rest. */
function quantities(list: Readonly<Record<string, number>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(list)) {
    if (!Number.isInteger(value)) throw new Error(`${name}: ${value} is not a whole number`);
    out[name] = name === 'cpu' ? `${value}m` : String(value);
  }
  return out;
}

function withoutPods(list: Readonly<Record<string, number>>): Record<string, number> {
  const { pods: _, ...rest } = list;
  return rest;
}

process.stdout.write(
  `${JSON.stringify({
    capacityTypes,
    limits: quantities(pool?.limits ?? {}),
    types: types.map((t) => ({
      name: t.name,
      labels: t.labels,
      capacity: quantities(t.capacity),
      overhead: {
        kubeReserved: quantities(t.overhead.kubeReserved),
        systemReserved: quantities(t.overhead.systemReserved),
        evictionThreshold: quantities(t.overhead.evictionThreshold),
      },
      offerings: t.offerings.map((o) => ({
        zone: o.zone,
        capacityType: o.capacityType,
        price: o.priceUsdPerHour,
        available: o.available,
      })),
    })),
    pods: input.pods.map((p) => ({
      name: p.name,
      uid: p.uid,
      labels: p.labels ?? {},
      // What the containers ask for: Karpenter counts the pod itself.
      requests: quantities(withoutPods(computePodRequests(p))),
    })),
  })}\n`,
);
