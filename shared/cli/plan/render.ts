import { ASSUMED_PRICE_MEANING, formatResources, subtractResources } from '../../core/index.ts';
import type { PlannedNodeClaim, PlanResult } from './plan.ts';

// `flotilla plan`'s text output.

/** Candidates and pods listed per NodeClaim before "… and N more". */
const MAX_LISTED = 8;

function capped(items: readonly string[], max = MAX_LISTED): string {
  const more = items.length - max;
  return `${items.slice(0, max).join(', ')}${more > 0 ? `, … and ${more} more` : ''}`;
}

const usd = (n: number) => `$${n.toFixed(4)}`;
const mark = (c: { readonly priceAssumed?: boolean }) => (c.priceAssumed === true ? '*' : '');

const FROM: Readonly<Record<PlanResult['regionFrom'], string>> = {
  flags: 'as given',
  nodes: "from the snapshot's Nodes",
  default: 'by default',
};

/** What a `*` after a price means. */
export const ASSUMED_PRICES = `assumed price: ${ASSUMED_PRICE_MEANING}; --known-prices leaves such offerings out`;

/** What the NodeClaim must hold: the pods' requests, and the DaemonSets' when any would run on it. */
function why(c: PlannedNodeClaim): string {
  const overhead = formatResources(c.daemonSetOverhead);
  if (overhead === '') return `the pods request ${formatResources(c.requests)}; no DaemonSet would run on it`;
  const pods = formatResources(subtractResources(c.requests, c.daemonSetOverhead));
  return `the pods request ${pods}, plus DaemonSets ${overhead}: ${formatResources(c.requests)} in all`;
}

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
      `  instance types, cheapest first (${c.instanceTypes.length}): ${capped(c.instanceTypes.map((t) => `${t.name} ${usd(t.priceUsdPerHour)}${mark(t)}`))}`,
      `  capacity type: ${c.capacityType}; zones: ${c.zones.join(', ') || 'none'}`,
      `  pods (${c.pods.length}): ${capped(c.pods)}`,
      `  why: ${why(c)}; ${
        c.fromPods.length === 0
          ? 'the pods add no requirements to the NodePool'
          : `the pods require ${c.fromPods.join('; ')}`
      }${c.taints.length === 0 ? '' : `; they tolerate the NodePool's taints (${c.taints.map((t) => `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`).join(', ')})`}`,
      `  $/hour: ${usd(c.priceUsdPerHour)}${c.instanceTypes[0] === undefined ? '' : mark(c.instanceTypes[0])} (${c.instanceTypes[0]?.name ?? 'no candidate'})`,
      '',
    );
  });
  out.push(
    `Total: ${plan.nodeClaims.length} ${plan.nodeClaims.length === 1 ? 'NodeClaim' : 'NodeClaims'}, ${usd(plan.totalUsdPerHour)}/hour`,
  );
  const assumed = plan.nodeClaims.some((c) => c.instanceTypes.some((t) => t.priceAssumed === true));
  if (assumed) out.push(`* ${ASSUMED_PRICES}`);
  else if (plan.knownPricesOnly)
    out.push('Known prices only: offerings with an assumed price were left out.');
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
