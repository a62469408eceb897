// Voluntary disruption and expiration: the controller (one pass per invocation of the disruption
// Lambda), one file per method (emptiness, static drift, drift, multi- and single-node consolidation), the candidates, the
// NodeClaim conditions and the command records that let a command outlive its pass.
export {
  COMMAND_TIMEOUT_MS,
  type DisruptionOptions,
  type DisruptionPassResult,
  type DisruptionPorts,
  disrupt,
  VALIDATION_MS,
} from './controller.ts';
export {
  commandDecision,
  type DisruptionCandidate,
  type DisruptionCommand,
  type DisruptionMethod,
  type MethodContext,
  type MethodPolicy,
  type SimulateScheduling,
} from './method.ts';
export {
  type CommandMethodName,
  type DisruptionMethodName,
  METHOD_NAMES,
  METHODS,
} from './methods.ts';
