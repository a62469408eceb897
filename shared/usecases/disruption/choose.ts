import type { DisruptionCommand, DisruptionSimulation, SimulateScheduling } from './method.ts';

// Which consolidation command a pass acts on. Pure.

/** What a command saves in USD per hour: its candidates' prices less its replacements' cheapest. */
export function commandSavings(command: DisruptionCommand): number {
  const before = command.candidates.reduce((sum, c) => sum + (c.pricePerHour ?? 0), 0);
  const after = command.replacements.reduce((sum, r) => sum + (r.instanceTypes[0]?.priceUsdPerHour ?? 0), 0);
  return before - after;
}

/**
 * The command that saves most $/hour, the first of them on a tie (the methods' order: multi-node,
 * repack, single-node). Used only with repack switched on: by default a pass takes the first
 * method's command, as Karpenter does (next-command.ts).
 */
export function mostSaving(commands: readonly DisruptionCommand[]): DisruptionCommand | undefined {
  let best: DisruptionCommand | undefined;
  let bestSavings = Number.NEGATIVE_INFINITY;
  for (const command of commands) {
    const savings = commandSavings(command);
    if (savings > bestSavings) {
      best = command;
      bestSavings = savings;
    }
  }
  return best;
}

/**
 * `simulate`, each set of candidates (and options) simulated once: the methods of one pass look at
 * the same state, and often at the same sets (a node alone, the first two).
 */
export function memoSimulation(simulate: SimulateScheduling): SimulateScheduling {
  const seen = new Map<string, DisruptionSimulation>();
  return (candidates, options) => {
    const key = [options?.maxNewNodeClaims ?? '', ...candidates.map((c) => c.nodeClaim.name).sort()].join(
      '\n',
    );
    let result = seen.get(key);
    if (result === undefined) {
      result = simulate(candidates, options);
      seen.set(key, result);
    }
    return result;
  };
}
