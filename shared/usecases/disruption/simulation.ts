import { isReschedulable, type SolveResult, solve } from '../../core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../ports/cluster.ts';
import type { ClusterState, SchedulingInput } from '../cluster-state.ts';
import { nodeIndex } from './candidates.ts';
import { COMMAND_ANNOTATION, commandsInFlight, decodeCommand } from './command-record.ts';
import type { DisruptionCandidate, SimulationOptions } from './method.ts';

// The scheduling simulations disruption runs on the provisioner's own input. Pure.

/**
 * Schedules the pods of `candidates` as if their nodes were gone. As Karpenter's
 * SimulateScheduling, the pods of nodes already going (being deleted, or the candidates of a
 * command in flight) need a place too, so that a second command does not plan on the room a first
 * command's replacement was launched for; and NodeClaims or joining nodes the provisioner launched
 * for pending pods are not offered to them.
 */
export function simulateWithout(
  input: SchedulingInput | undefined,
  state: ClusterState,
  claims: readonly ClusterNodeClaim[],
  candidates: readonly DisruptionCandidate[],
  options: SimulationOptions = {},
): SolveResult {
  if (input === undefined) return { nodeClaims: [], placements: [], unschedulable: [] };
  const leaving = new Set(candidates.map((c) => c.node.name));
  const disrupting = new Set([...commandsInFlight(claims).commands.values()].flatMap((r) => r.candidates));
  const nodeFor = nodeIndex(state.nodes);
  const going: ClusterNode[] = [];
  for (const claim of claims) {
    if (!claim.deleting && !disrupting.has(claim.name)) continue;
    const node = nodeFor(claim);
    if (node !== undefined && !leaving.has(node.name)) going.push(node);
  }
  for (const node of going) leaving.add(node.name);
  // Capacity on its way that the provisioner launched is promised to pending pods: only disruption
  // replacements (and initialized nodes) are room for the pods of the nodes that go.
  const replacements = recordedReplacements(claims);
  const replacementNodes = new Set(
    claims.flatMap((c) =>
      replacements.has(c.name) && c.status.nodeName !== undefined ? [c.status.nodeName] : [],
    ),
  );
  return solve({
    ...input.solve,
    pods: [
      ...candidates.flatMap((c) => c.reschedulablePods),
      ...going.flatMap((n) => n.pods.filter(isReschedulable)),
    ],
    nodes: (input.solve.nodes ?? []).filter(
      (n) => !leaving.has(n.name) && (n.initialized || replacementNodes.has(n.name)),
    ),
    nodeClaims: (input.solve.nodeClaims ?? []).filter((c) => replacements.has(c.name)),
    ...(options.maxNewNodeClaims === undefined
      ? {}
      : { options: { ...input.solve.options, maxNewNodeClaims: options.maxNewNodeClaims } }),
  });
}

/** Every NodeClaim a command record names as a replacement. */
function recordedReplacements(claims: readonly ClusterNodeClaim[]): Set<string> {
  const out = new Set<string>();
  for (const claim of claims) {
    const value = claim.annotations[COMMAND_ANNOTATION];
    const record = value === undefined ? undefined : decodeCommand(value);
    if (record !== undefined && !('problem' in record)) for (const r of record.replacements) out.add(r);
  }
  return out;
}

/** Nodes the scheduler would give pending pods now: Karpenter's nominated nodes. */
export function nominatedNodes(state: ClusterState, input: SchedulingInput | undefined): Set<string> {
  if (state.pendingPods.length === 0 || input === undefined) return new Set();
  const result = solve(input.solve);
  return new Set(result.placements.flatMap((p) => (p.kind === 'existingNode' ? [p.nodeName] : [])));
}
