import { ASSUMED_PRICE_MEANING } from '../../core/index.ts';
import type { NodeExplanation } from '../../usecases/explain/node.ts';
import type { PodExplanation } from '../../usecases/explain/pod.ts';
import { ASSUMED_MARK } from '../../usecases/explain/reasons.ts';
import type { DecisionLookup } from './logs.ts';

// `flotilla explain` for a person: the verdict, each reason as its fixed headline and what this
// case adds, then the details (NodePools one by one, the launch, the budgets).

/** What the `*` after a price means. */
const ASSUMED_LEGEND = `${ASSUMED_MARK} assumed price: ${ASSUMED_PRICE_MEANING}\n`;

const utc = (ms: number) => `${new Date(ms).toISOString().replace('.000Z', 'Z')} UTC`;

/** One reason line: `  - headline: detail`. */
const line = (r: { readonly headline: string; readonly detail: string }) =>
  `  - ${r.headline}${r.detail === '' ? '' : `: ${r.detail}`}\n`;

export function renderPodExplanation(e: Extract<PodExplanation, { kind: 'pod' }>): string {
  const waits = e.nodePools.length > 0 || e.failedScheduling !== undefined;
  let out = `pod ${e.pod} ${waits ? 'waits' : 'does not wait for Flotilla'} (as of ${utc(e.atMs)})\n`;
  for (const r of e.reasons) out += line(r);
  if (e.launch !== undefined) {
    const l = e.launch;
    out += `\nLaunch: nodePool ${l.nodePool} (ec2NodeClass ${l.nodeClass}), ${l.capacityType}, zones ${l.zones.join(', ') || 'none'}\n`;
    out += `  instance types, cheapest first (${l.candidates} candidates; the fleet request takes the cheapest available):\n`;
    for (const t of l.instanceTypes)
      out += `    ${t.name.padEnd(16)} $${t.priceUsdPerHour.toFixed(4)}/h${t.priceAssumed === true ? ASSUMED_MARK : ''}\n`;
    if (l.pods.length > 1)
      out += `  with ${l.pods.length - 1} other pending pods: ${l.pods.filter((p) => p !== e.pod).join(', ')}\n`;
  }
  if (e.nodePools.length > 0) {
    out += '\nNodePools:\n';
    const width = Math.max(...e.nodePools.map((p) => p.nodePool.length));
    for (const p of e.nodePools) out += `  ${p.nodePool.padEnd(width)}  ${p.headline}: ${p.detail}\n`;
  }
  if (e.failedScheduling !== undefined) out += `\nFailedScheduling Event: ${e.failedScheduling}\n`;
  if (e.launch?.instanceTypes.some((t) => t.priceAssumed === true) === true) out += ASSUMED_LEGEND;
  return out;
}

export function renderNodeExplanation(e: Extract<NodeExplanation, { kind: 'node' }>): string {
  const owner = [
    e.nodeClaim === undefined ? '' : `nodeClaim ${e.nodeClaim}`,
    e.nodePool === undefined ? '' : `nodePool ${e.nodePool}`,
  ]
    .filter(Boolean)
    .join(', ');
  let out = `node ${e.node}${owner === '' ? '' : ` (${owner})`} ${e.verdict === 'stays' ? 'stays' : 'is disrupted next'} (as of ${utc(e.atMs)})\n`;
  for (const r of e.reasons) out += line(r);
  if (e.pricesAssumed === true) out += ASSUMED_LEGEND;
  return out;
}

/** The last decisions about the object, or why they were not looked up. */
export function renderDecisions(lookup: DecisionLookup): string {
  if (lookup.kind === 'skipped') return `\nLast decisions: not looked up (${lookup.why})\n`;
  if (lookup.lines.length === 0)
    return `\nLast decisions: none in ${lookup.groups} log groups since ${utc(lookup.sinceMs)}\n`;
  return `\nLast decisions (CloudWatch Logs, since ${utc(lookup.sinceMs)}):\n${lookup.lines.map((l) => `  ${l}\n`).join('')}`;
}
