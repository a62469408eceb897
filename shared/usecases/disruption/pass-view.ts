import type { EC2NodeClass } from '../../ports/cloud.ts';
import type { ClusterNodeClaim, ClusterNodePool } from '../../ports/cluster.ts';
import type { DecisionOutput } from '../decisions/decision.ts';
import type { DisruptDecision } from '../decisions/disruption.ts';
import type { ClusterState, SchedulingInput } from '../state/cluster-state.ts';
import type { Confirmation } from './confirm.ts';
import type { EffectPorts } from './effects.ts';

/** What one step of a disruption pass reads: the cluster as last read, and where decisions go. */
export interface PassView {
  readonly ports: EffectPorts & DecisionOutput;
  readonly state: ClusterState;
  /** The NodeClaims of the pass's NodePools, with the conditions this pass computed. */
  readonly claims: readonly ClusterNodeClaim[];
  readonly input: SchedulingInput | undefined;
  readonly pools: ReadonlyMap<string, ClusterNodePool>;
  readonly classes: ReadonlyMap<string, EC2NodeClass>;
  /** The disruption lease's token (command ids derive from it). */
  readonly leaseToken: number;
  readonly nowMs: number;
  /** NodePools whose drift and expiration replacements wait on their alarms, with why. */
  readonly rolloutHeld?: ReadonlyMap<string, string>;
  /** Writes the decision's line and keeps it for the pass's result. */
  record(decision: DisruptDecision): void;
  /** A confirmation over this read: what a step acts on, read again from the API server (confirm.ts). */
  confirmation(): Confirmation;
}
