// Voluntary disruption: one file per method (emptiness, drift, multi-node and single-node
// consolidation), each implementing DisruptionMethod; the controller tries them in that order.
export {
  commandDecision,
  type DisruptionCandidate,
  type DisruptionCommand,
  type DisruptionMethod,
  type SimulateScheduling,
} from './method.ts';
