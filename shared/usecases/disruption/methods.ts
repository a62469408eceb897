import {
  COMMAND_METHODS,
  type CommandMethodName,
  type DisruptionMethodName,
} from '../state/command-record.ts';
import { drift } from './drift.ts';
import { emptiness } from './emptiness.ts';
import type { DisruptionMethod, MethodPolicy } from './method.ts';
import { multiNodeConsolidation } from './multi-node.ts';
import { repackConsolidation } from './repack.ts';
import { singleNodeConsolidation } from './single-node.ts';
import { staticDrift } from './static-drift.ts';

// The registry of voluntary disruption methods: each is one file declaring its name, budget
// reason, order and policy, and one line here. Its name is one of the command record's
// (state/command-record.ts), which the decisions, the simulator and the benchmark's tallies use;
// the registry holds exactly one method of each (methods.test.ts).

const REGISTERED = [
  emptiness,
  staticDrift,
  drift,
  multiNodeConsolidation,
  repackConsolidation,
  singleNodeConsolidation,
] as const satisfies readonly DisruptionMethod<DisruptionMethodName>[];

/** The voluntary methods in the order the controller tries them (their `order`). */
export const METHODS: readonly DisruptionMethod<DisruptionMethodName>[] = [...REGISTERED].sort(
  (a, b) => a.order - b.order,
);

/** The voluntary methods' names, in the controller's order. */
export const METHOD_NAMES = METHODS.map((m) => m.name) as [DisruptionMethodName, ...DisruptionMethodName[]];

export { COMMAND_METHODS, type CommandMethodName, type DisruptionMethodName };

/** The method of this name, or undefined (expiration, or a name no method has). */
export function methodNamed(name: string): DisruptionMethod<DisruptionMethodName> | undefined {
  return METHODS.find((m) => m.name === name);
}

/** The policy of the method of this name; undefined for expiration. */
export function policyOf(name: string): MethodPolicy | undefined {
  return methodNamed(name)?.policy;
}

/** Whether a command of this method is consolidation's (its savings compete, it is simulated again). */
export function isConsolidationCommand(name: string): boolean {
  return policyOf(name)?.validation === 'simulateAgain';
}
