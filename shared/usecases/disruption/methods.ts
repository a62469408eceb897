import { FlotillaError } from '../../core/errors.ts';
import {
  COMMAND_ANNOTATION,
  COMMAND_METHODS,
  type CommandMethodName,
  type CommandRecord,
  type DisruptionMethodName,
} from '../state/command-record.ts';
import { drift } from './drift.ts';
import { emptiness } from './emptiness.ts';
import { type CommandMethod, type DisruptionMethod, expirationMethod } from './method.ts';
import { multiNodeConsolidation } from './multi-node.ts';
import { repackConsolidation } from './repack.ts';
import { scheduleWindow } from './schedule-window.ts';
import { singleNodeConsolidation } from './single-node.ts';
import { staticDrift } from './static-drift.ts';

// The registry of voluntary disruption methods: each is one file declaring its name, budget
// reason, order and policy, and one line here. Its name is one of the command record's
// (state/command-record.ts), which the decisions, the simulator and the benchmark's tallies use;
// the registry holds exactly one method of each (methods.test.ts). A record read back names its
// method: it is resolved here to the method object (the registry's, or expiration's), whose rules
// the commands in flight follow.

const REGISTERED = [
  scheduleWindow,
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

/**
 * The methods a pass asks, in order: Karpenter's (emptiness, static drift, drift, multi-node and
 * single-node consolidation), and repack between the two consolidations when `repack` is on
 * (`repackConsolidation`, Flotilla's own, off by default).
 */
export function methodsAsked(repack: boolean): readonly DisruptionMethod<DisruptionMethodName>[] {
  return repack ? METHODS : KARPENTER_METHODS;
}

const KARPENTER_METHODS = METHODS.filter((m) => m !== repackConsolidation);

/** The voluntary methods' names, in the controller's order. */
export const METHOD_NAMES = METHODS.map((m) => m.name) as [DisruptionMethodName, ...DisruptionMethodName[]];

export { COMMAND_METHODS, type CommandMethodName, type DisruptionMethodName };

/** Every method a command record may name, by name: the registry's and expiration. */
const RECORDED: ReadonlyMap<string, CommandMethod> = new Map(
  [...METHODS, expirationMethod].map((m) => [m.name, m]),
);

/**
 * A command record names a method this version does not know (a newer version's, say, or a
 * method file not added to the registry).
 */
export class UnknownDisruptionMethodError extends FlotillaError {
  readonly code = 'UnknownDisruptionMethod';

  constructor(
    readonly commandId: string,
    readonly method: string,
  ) {
    super(
      `disruption command ${commandId} names method "${method}", which this version does not know (known: ${[...RECORDED.keys()].join(', ')}): the command is left as it is, its NodeClaims still in it; let the version that wrote it finish it, or remove the ${COMMAND_ANNOTATION} annotation from its NodeClaims`,
    );
  }
}

/**
 * The method a command record read back names, as an object: a method of the registry or
 * expiration. A name this version does not know is an UnknownDisruptionMethodError (a value):
 * the record is then left alone, neither finished nor undone, and its NodeClaims stay in the
 * command for every other reader of the records.
 */
export function recordedMethod(
  record: Pick<CommandRecord, 'id' | 'method'>,
): CommandMethod | UnknownDisruptionMethodError {
  return RECORDED.get(record.method) ?? new UnknownDisruptionMethodError(record.id, record.method);
}
