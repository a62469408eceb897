import type { FitScoring } from '../../core/index.ts';
import { makeLogger } from '../../runtime/logger.ts';
import { dropMetrics } from '../../runtime/metrics-sink.ts';
import type { SimulationWorld } from '../../simulator/engine.ts';
import { explainNode } from '../../usecases/explain/node.ts';
import { explainPod } from '../../usecases/explain/pod.ts';
import type { ExplainTarget } from './command.ts';
import { renderNodeExplanation, renderPodExplanation } from './render.ts';

// `flotilla simulate --explain`: the same explanation as on a real cluster, over the simulator's
// in-memory cluster and cloud as the run leaves them.

/** The explanation of `target` in the simulator's world, as text. */
export async function explainInWorld(
  world: SimulationWorld,
  target: ExplainTarget,
  settings: {
    readonly repackConsolidation?: boolean;
    readonly runawayGuard?: boolean;
    readonly maxCostPerHour?: number;
    readonly kubeSchedulerScoring?: FitScoring;
  } = {},
): Promise<string> {
  const ports = {
    ...(settings.kubeSchedulerScoring === undefined
      ? {}
      : { kubeSchedulerScoring: settings.kubeSchedulerScoring }),
    repackConsolidation: settings.repackConsolidation === true,
    runawayGuard: settings.runawayGuard !== false,
    ...(settings.maxCostPerHour === undefined ? {} : { maxCostPerHour: settings.maxCostPerHour }),
    cluster: world.cluster,
    cloud: world.cloud,
    logger: makeLogger({}, { level: 'error', sink: () => {} }),
    metrics: dropMetrics(() => new Date(world.nowMs)),
    nowMs: world.nowMs,
  };
  const explanation =
    target.kind === 'pod' ? await explainPod(ports, target) : await explainNode(ports, target.name);
  if (explanation.kind === 'notFound') return `${explanation.message}\n`;
  return explanation.kind === 'pod' ? renderPodExplanation(explanation) : renderNodeExplanation(explanation);
}
