import { createHash } from 'node:crypto';
import { DISRUPTED_TAINT, NodeClaimConditionType, type NodeClaimPlan } from '../../core/index.ts';
import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { Cluster, ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import { ignoreNotFound } from '../../ports/errors.ts';
import type { TerminationQueue } from '../../ports/work-queue.ts';
import type { Logger } from '../../runtime/logger.ts';
import { COMMAND_ANNOTATION, type CommandRecord, encodeCommand } from '../state/command-record.ts';
import { toNewNodeClaim } from '../state/new-nodeclaim.ts';
import { handToTermination, viaQueue } from '../termination/handover.ts';
import { disruptionTerminating, recordAll } from './events.ts';

// What carrying out a disruption command does to the cluster, each step idempotent: create the
// replacements (each carrying the command's record), mark the candidates (the record, the
// `karpenter.sh/disrupted` taint, the `DisruptionReason` condition), delete them into the
// termination path, or undo the marks.

export interface EffectPorts {
  readonly cluster: Cluster;
  readonly terminationQueue: TerminationQueue;
  /** Asks the provisioner to launch these NodeClaims now (its launch path, its lease). */
  readonly requestLaunch: (nodeClaims: readonly string[]) => Promise<void>;
}

/** A short hex digest of the parts: command ids and replacement names. */
export function digest(parts: readonly string[], length = 10): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, length);
}

/** The replacement names of a command: `<nodePool>-<10 hex chars>`, derived from the command id. */
export function replacementNames(id: string, plans: readonly NodeClaimPlan[]): string[] {
  return plans.map((plan, i) => `${plan.nodePoolName.slice(0, 200)}-${digest([id, String(i)])}`);
}

/**
 * Creates the replacement NodeClaims (unlaunched; the provisioner launches them), each with the
 * command's record, and asks for their launch. A replacement whose NodePool is gone is skipped.
 * Returns the names created (a repeated create counts).
 */
export async function createReplacements(
  ports: EffectPorts,
  plans: readonly NodeClaimPlan[],
  record: CommandRecord,
  pools: ReadonlyMap<string, ClusterNodePool>,
  classes: ReadonlyMap<string, EC2NodeClass>,
  annotations: Readonly<Record<string, string>> = {},
): Promise<string[]> {
  const created: string[] = [];
  for (const [i, plan] of plans.entries()) {
    const pool = pools.get(plan.nodePoolName);
    const name = record.replacements[i];
    if (pool === undefined || name === undefined) continue;
    const claim = toNewNodeClaim(name, plan, pool, classes.get(plan.nodeClassName));
    await ports.cluster.createNodeClaim({
      ...claim,
      annotations: { ...claim.annotations, ...annotations, [COMMAND_ANNOTATION]: encodeCommand(record) },
    });
    created.push(name);
  }
  if (created.length > 0) await ports.requestLaunch(created);
  return created;
}

/**
 * Records the command on the candidates, taints their nodes and sets `DisruptionReason`; returns
 * how many writes that took (none when a repeat finds every mark in place).
 */
export async function markCandidates(
  ports: EffectPorts,
  claims: readonly ClusterNodeClaim[],
  record: CommandRecord,
  /**
   * A repeat of the marks (a command still in flight): the taint is left out for Nodes this read
   * of them shows tainted already. A new command taints every Node whatever a read says.
   */
  tainted?: (claim: ClusterNodeClaim) => boolean,
): Promise<number> {
  const { cluster } = ports;
  const value = encodeCommand(record);
  let writes = 0;
  for (const claim of claims) {
    if (claim.annotations[COMMAND_ANNOTATION] !== value) {
      writes += 1;
      await ignoreNotFound(
        cluster.patchNodeClaimMetadata(claim.name, { annotations: { [COMMAND_ANNOTATION]: value } }),
      );
    }
    if (claim.status.nodeName !== undefined && tainted?.(claim) !== true) {
      writes += 1;
      await ignoreNotFound(cluster.patchNode(claim.status.nodeName, { addTaints: [DISRUPTED_TAINT] }));
    }
    const current = claim.status.conditions.find((c) => c.type === NodeClaimConditionType.disruptionReason);
    if (current?.status !== 'True' || current.reason !== record.reason) {
      writes += 1;
      await ignoreNotFound(
        cluster.patchNodeClaimStatus(claim.name, {
          conditions: [
            {
              type: NodeClaimConditionType.disruptionReason,
              status: 'True',
              reason: record.reason,
              message: `disruption command ${record.id} (${record.method})`,
            },
          ],
        }),
      );
    }
  }
  return writes;
}

/** Undoes a command's marks: the taint, the condition and the record. */
export async function unmarkCandidates(
  ports: EffectPorts,
  claims: readonly ClusterNodeClaim[],
): Promise<void> {
  const { cluster } = ports;
  for (const claim of claims) {
    if (claim.status.nodeName !== undefined) {
      await ignoreNotFound(cluster.patchNode(claim.status.nodeName, { removeTaints: [DISRUPTED_TAINT] }));
    }
    if (claim.status.conditions.some((c) => c.type === NodeClaimConditionType.disruptionReason)) {
      await ignoreNotFound(
        cluster.patchNodeClaimStatus(claim.name, {
          removeConditions: [NodeClaimConditionType.disruptionReason],
        }),
      );
    }
    if (claim.annotations[COMMAND_ANNOTATION] !== undefined) {
      await ignoreNotFound(
        cluster.patchNodeClaimMetadata(claim.name, { annotations: { [COMMAND_ANNOTATION]: null } }),
      );
    }
  }
}

/**
 * Deletes the candidates; the termination queue drains and terminates them. Each gets
 * `DisruptionTerminating` on its Node and NodeClaim.
 */
export async function deleteCandidates(
  ports: EffectPorts & { readonly logger: Logger },
  claims: readonly ClusterNodeClaim[],
  reason: string,
): Promise<void> {
  for (const claim of claims) {
    await deleteNodeClaim(ports, claim);
    await recordAll(ports.cluster, disruptionTerminating(claim, reason));
  }
}

/** Deletes the replacements of a command undone (no Event: nothing is disrupted). */
export async function deleteReplacements(
  ports: EffectPorts & { readonly logger: Logger },
  claims: readonly ClusterNodeClaim[],
): Promise<void> {
  for (const claim of claims) await deleteNodeClaim(ports, claim);
}

async function deleteNodeClaim(
  ports: EffectPorts & { readonly logger: Logger },
  claim: ClusterNodeClaim,
): Promise<void> {
  await ports.cluster.deleteNodeClaim(claim.name);
  await handToTermination(viaQueue(ports.terminationQueue), claim.name, ports.logger);
}
