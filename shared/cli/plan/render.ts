import { formatResources } from '../../core/index.ts';
import type { PlanResult } from './plan.ts';

// `flotilla plan`'s text output.

/** Candidates and pods listed per NodeClaim before "… and N more". */
const MAX_LISTED = 8;

function capped(items: readonly string[], max = MAX_LISTED): string {
  const more = items.length - max;
  return `${items.slice(0, max).join(', ')}${more > 0 ? `, … and ${more} more` : ''}`;
}

const usd = (n: number) => `$${n.toFixed(4)}`;

const FROM: Readonly<Record<PlanResult['regionFrom'], string>> = {
  flags: 'as given',
  nodes: "from the snapshot's Nodes",
  default: 'by default',
};

/** The plan as text for a terminal. */
export function renderPlan(plan: PlanResult): string {
  const out: string[] = [
    `Plan for ${plan.pendingPods} pending ${plan.pendingPods === 1 ? 'pod' : 'pods'} in ${plan.region} (zones ${plan.zones.join(', ')}), prices from the bundled catalog`,
    `  region ${FROM[plan.regionFrom]}, zones ${FROM[plan.zonesFrom]}`,
    '',
  ];
  plan.nodeClaims.forEach((c, i) => {
    out.push(
      `NodeClaim ${i + 1}: ${c.name} (nodePool ${c.nodePool}, ec2NodeClass ${c.nodeClass})`,
      `  instance types, cheapest first (${c.instanceTypes.length}): ${capped(c.instanceTypes.map((t) => `${t.name} ${usd(t.priceUsdPerHour)}`))}`,
      `  capacity type: ${c.capacityType}; zones: ${c.zones.join(', ') || 'none'}`,
      `  pods (${c.pods.length}): ${capped(c.pods)}`,
      `  why: the pods request ${formatResources(c.requests)} with DaemonSet overhead; ${
        c.fromPods.length === 0
          ? 'the pods add no requirements to the NodePool'
          : `the pods require ${c.fromPods.join('; ')}`
      }${c.taints.length === 0 ? '' : `; they tolerate the NodePool's taints (${c.taints.map((t) => `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`).join(', ')})`}`,
      `  $/hour: ${usd(c.priceUsdPerHour)} (${c.instanceTypes[0]?.name ?? 'no candidate'})`,
      '',
    );
  });
  out.push(
    `Total: ${plan.nodeClaims.length} ${plan.nodeClaims.length === 1 ? 'NodeClaim' : 'NodeClaims'}, ${usd(plan.totalUsdPerHour)}/hour`,
  );
  if (plan.placements.length > 0) {
    out.push('', `Pods that fit existing capacity (${plan.placements.length}):`);
    for (const p of plan.placements) out.push(`  ${p.pod} on ${p.on}`);
  }
  if (plan.unschedulable.length > 0) {
    out.push('', `Pods that cannot be scheduled (${plan.unschedulable.length}):`);
    for (const u of plan.unschedulable) out.push(`  ${u.pod}: ${u.message}`);
  }
  if (plan.skippedNodePools.length > 0) {
    out.push('', 'NodePools left out:');
    for (const s of plan.skippedNodePools) out.push(`  ${s.nodePool}: ${s.reason}`);
  }
  const ignored = Object.entries(plan.ignoredKinds).sort(([a], [b]) => (a < b ? -1 : 1));
  if (ignored.length > 0) out.push('', `Ignored objects: ${ignored.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  return `${out.join('\n')}\n`;
}
