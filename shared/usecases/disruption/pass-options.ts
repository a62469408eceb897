import type { SolveOptions } from '../../core/index.ts';
import type { AlarmReader } from '../../ports/alarms.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Cloud } from '../../ports/cloud.ts';
import type { LeaseStore } from '../../ports/lease.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { MetricsSink } from '../decisions/decision.ts';
import type { DisruptDecision } from '../decisions/disruption.ts';
import type { ConsolidationMemo } from './consolidated.ts';
import type { EffectPorts } from './effects.ts';

// What a disruption pass works with and is asked to do (controller.ts runs it).

export interface DisruptionPorts extends EffectPorts {
  /** CloudWatch's alarms, for the NodePools that name some (rollout-hold.ts). @default none */
  readonly alarms?: AlarmReader;
  readonly cloud: Pick<Cloud, 'instanceTypes' | 'list'>;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger: Logger;
  readonly metrics: MetricsSink;
}

export interface DisruptionOptions {
  /** Who takes the lease: the invocation id. */
  readonly holder: string;
  /** @default 'disruption' */
  readonly leaseName?: string;
  /**
   * The lease is taken for this long and renewed before each command and after each validation
   * wait, so a pass that dies keeps the next ones out for no longer than this. @default 45
   */
  readonly leaseTtlSeconds?: number;
  /**
   * Epoch ms by which the pass must be done (the invocation's deadline less a margin). The pass
   * plans its work in half the time to it (WORK_SHARE): no command starts that could not finish its
   * validation by then, and no condition write starts after it. @default none
   */
  readonly deadlineMs?: () => number | undefined;
  /** @default VALIDATION_MS */
  readonly validationMs?: number;
  /** New commands one pass may start. @default 10 */
  readonly maxCommands?: number;
  /**
   * Limits the pass to the NodePools this accepts (their NodeClaims and nodes); other nodes still
   * count as capacity for the simulation. For a cluster whose NodePools are shared out between
   * several controllers. @default every NodePool
   */
  readonly nodePools?: (name: string) => boolean;
  /** The scheduling settings the simulation solves with (Karpenter's minValues and preference policies). */
  readonly solveOptions?: SolveOptions;
  /**
   * Whether consolidation may replace spot nodes by spot nodes (Karpenter's
   * `SpotToSpotConsolidation` feature gate); otherwise spot nodes are only deleted. @default false
   */
  readonly spotToSpotConsolidation?: boolean;
  /**
   * Flotilla's repack consolidation (the stack's `repackConsolidation`): repack is one of the
   * methods, and the consolidation methods' commands compete on savings. Off, Karpenter's methods
   * alone, the first that has a command acting. @default false
   */
  readonly repackConsolidation?: boolean;
  /**
   * Karpenter's consolidated memo (consolidated.ts), kept from pass to pass by whoever runs them
   * (setUpDisruption keeps one for its container). @default none: every method asked every pass
   */
  readonly consolidationMemo?: ConsolidationMemo;
  /**
   * Flotilla's runaway guard (the stack's `runawayGuard`): the empty nodes a pass reclaims count
   * towards a NodePool's launch back-off. False, as Karpenter has no guard. @default true
   */
  readonly runawayGuard?: boolean;
  /**
   * Karpenter's NodeOverlay feature gate: the simulations and the prices compared plan with the
   * NodeOverlays. Off, they are not read. @default false (Karpenter's default)
   */
  readonly nodeOverlay?: boolean;
  /**
   * A shadow stack's pass (its ports write nothing): it computes the conditions without writing
   * them, leaves expiry and commands in flight to the live autoscaler, and proposes the command it
   * would start first, confirmed on the API server's objects, without carrying it out. @default false
   */
  readonly shadow?: boolean;
}

export interface DisruptionPassResult {
  readonly kind: 'skipped' | 'pass';
  /** Commands started or carried out in this pass. */
  readonly decisions: readonly DisruptDecision[];
  /** Commands still waiting for replacements after the pass. */
  readonly inFlight: number;
}
