import type { ClusterResources } from '../../ports/cluster-resources.ts';
import { DECISION_SAMPLE_SIZE, type DecisionOutput, writeDecision } from '../decisions/decision.ts';
import type { CleanUpDecision } from '../decisions/types.ts';

// The clean-up when the cluster goes (`cdk destroy` of the stack, EKS DeleteCluster of its
// cluster, or a dry run from the CLI): every instance and launch template Flotilla launched for the
// cluster, found by its ownership tags only, is named in one `cluster clean-up` line before
// anything is removed; then the instances are terminated and the templates deleted, and a second
// line says what went. Karpenter leaves them running when it is uninstalled or its cluster deleted.

export interface CleanUpPorts extends DecisionOutput {
  readonly resources: ClusterResources;
}

export interface CleanUpResult {
  readonly instances: readonly string[];
  readonly launchTemplates: readonly string[];
  /** Whether they were removed (false for a dry run). */
  readonly removed: boolean;
}

/**
 * Lists what Flotilla launched for `cluster` and, unless `trigger` is `dryRun`, removes it.
 * @throws CloudApiError when EC2 cannot be read or refuses a removal (what went before stays gone;
 *   a retry lists what is left).
 */
export async function cleanUpCluster(
  ports: CleanUpPorts,
  cluster: string,
  trigger: CleanUpDecision['reason'],
): Promise<CleanUpResult> {
  const [instances, templates] = await Promise.all([
    ports.resources.instances(),
    ports.resources.launchTemplates(),
  ]);
  const ids = instances.map((i) => i.instanceId).sort();
  const names = templates.map((t) => t.name).sort();
  const line = (action: CleanUpDecision['action']): CleanUpDecision => ({
    kind: 'cleanUp',
    reason: trigger,
    action,
    cluster,
    instances: ids.slice(0, DECISION_SAMPLE_SIZE),
    instanceCount: ids.length,
    launchTemplates: names.slice(0, DECISION_SAMPLE_SIZE),
    launchTemplateCount: names.length,
  });
  writeDecision(ports, line('planned'));
  if (trigger === 'dryRun') return { instances: ids, launchTemplates: names, removed: false };
  // Instances first: a template in use by a launch still in flight may be needed until then.
  if (ids.length > 0) await ports.resources.terminate(ids);
  for (const template of templates) await ports.resources.deleteLaunchTemplate(template.id);
  writeDecision(ports, line('done'));
  return { instances: ids, launchTemplates: names, removed: true };
}
