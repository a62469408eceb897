// Karpenter's operator settings that Flotilla honours, by Karpenter's names and with its defaults
// (core: BATCH_IDLE_DURATION, BATCH_MAX_DURATION; AWS provider: VM_MEMORY_OVERHEAD_PERCENT,
// RESERVED_ENIS, ISOLATED_VPC, AMI_REFRESH_INTERVAL). Durations are in milliseconds here; the stack
// takes CDK Durations and the simulator Go durations, and both check them with
// `operatorSettingsProblems`.

export interface OperatorSettings {
  /** BATCH_IDLE_DURATION: a batch of pending pods closes once none arrived for this long. */
  readonly batchIdleMs: number;
  /** BATCH_MAX_DURATION: a batch closes after this long in any case. */
  readonly batchMaxMs: number;
  /** VM_MEMORY_OVERHEAD_PERCENT: the fraction of an instance's memory the hypervisor keeps. */
  readonly vmMemoryOverheadPercent: number;
  /** RESERVED_ENIS: ENIs left out of the ENI-limited max pods (VPC CNI custom networking). */
  readonly reservedENIs: number;
  /** ISOLATED_VPC: no call to the Pricing API, which has no VPC endpoint. */
  readonly isolatedVPC: boolean;
  /** AMI_REFRESH_INTERVAL: an EC2NodeClass is resolved again at most this often. */
  readonly amiRefreshMs: number;
}

export const DEFAULT_OPERATOR_SETTINGS: OperatorSettings = {
  batchIdleMs: 1_000,
  batchMaxMs: 10_000,
  vmMemoryOverheadPercent: 0.075,
  reservedENIs: 0,
  isolatedVPC: false,
  amiRefreshMs: 60_000,
};

/**
 * The longest batch window the provisioner Lambda can hold open: its 90 s timeout must also cover
 * up to 20 s waiting for the lease, reading the cluster, planning and launching.
 */
export const MAX_BATCH_MS = 30_000;

/** The shortest AMI refresh interval, as Karpenter's own check (`must be at least 1m`). */
export const MIN_AMI_REFRESH_MS = 60_000;

/** Each setting's name as the stack's prop and the scenario's setting spell it. */
const NAMES = {
  batchIdleMs: 'batchIdleDuration',
  batchMaxMs: 'batchMaxDuration',
  vmMemoryOverheadPercent: 'vmMemoryOverheadPercent',
  reservedENIs: 'reservedENIs',
  isolatedVPC: 'isolatedVPC',
  amiRefreshMs: 'amiRefreshInterval',
} as const satisfies Record<keyof OperatorSettings, string>;

/** Every problem with the settings given (those absent take their defaults), one message each. */
export function operatorSettingsProblems(settings: Partial<OperatorSettings>): string[] {
  const problems: string[] = [];
  const s = { ...DEFAULT_OPERATOR_SETTINGS, ...settings };
  const ms = (v: number) => `${v} ms`;
  for (const key of ['batchIdleMs', 'batchMaxMs'] as const) {
    const value = s[key];
    if (!Number.isInteger(value) || value <= 0 || value > MAX_BATCH_MS) {
      problems.push(
        `${NAMES[key]} is ${ms(value)}; it must be whole milliseconds, more than 0 and at most ${MAX_BATCH_MS / 1000} s (the provisioner Lambda's timeout also covers the lease wait and the launches)`,
      );
    }
  }
  if (s.batchMaxMs < s.batchIdleMs) {
    problems.push(
      `batchMaxDuration (${ms(s.batchMaxMs)}) is shorter than batchIdleDuration (${ms(s.batchIdleMs)}); the batch would always close at the maximum`,
    );
  }
  const overhead = s.vmMemoryOverheadPercent;
  if (!Number.isFinite(overhead) || overhead < 0 || overhead >= 1) {
    problems.push(
      `vmMemoryOverheadPercent is ${overhead}; it is a fraction of memory (0.075 is 7.5%): at least 0 and less than 1`,
    );
  }
  if (!Number.isInteger(s.reservedENIs) || s.reservedENIs < 0) {
    problems.push(`reservedENIs is ${s.reservedENIs}; it must be a whole number, 0 or more`);
  }
  const refresh = s.amiRefreshMs;
  if (!Number.isInteger(refresh / 1000) || refresh < MIN_AMI_REFRESH_MS) {
    problems.push(
      `amiRefreshInterval is ${ms(refresh)}; it must be whole seconds and at least 1 minute (as Karpenter's)`,
    );
  }
  return problems;
}
