// The runaway guard's public surface: its one entry point and what it answers.
export {
  type LaunchBackoffPorts,
  type LaunchBackoffScan,
  type LaunchGuard,
  reconcileLaunchBackoff,
  type TimedOutNodeClaim,
} from './launch-backoff.ts';
export { pausedSinceJudged, type RecheckInput, recheckLaunchGuard } from './recheck.ts';
export { LAUNCH_BACKOFF_ANNOTATION } from './state.ts';
