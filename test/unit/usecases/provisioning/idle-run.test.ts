import { describe, expect, it } from 'vitest';
import { withClusterSummary } from '../../../../shared/adapters/summary-cluster.ts';
import {
  encodeSummaryDocument,
  encodeSummaryIndex,
  readSummaryDocument,
  readSummaryIndex,
  SummaryBuilder,
  summaryIndexOf,
} from '../../../../shared/apis/index.ts';
import type { Cluster } from '../../../../shared/ports/cluster.ts';
import type { SummarySource } from '../../../../shared/ports/summary.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';
import { addPendingPod, provisionerSteps, scenarioWorld } from './world.ts';

// A provisioner run with nothing pending, on the schedule, reads the summary's index and no list
// when the index says nothing is being deleted and nothing waits for a launch; otherwise it reads
// the lists as before. The summary and its index are built with the shim's own code from what the
// in-memory API server holds, and read through the Lambdas' own decorator.

function setup() {
  const world = scenarioWorld();
  const { clock, cluster } = world;
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const document = () => {
    const builder = new SummaryBuilder('prod');
    builder.replace('pods', cluster.list('Pod'));
    builder.replace('nodes', cluster.list('Node'));
    builder.replace('nodeClaims', cluster.list('NodeClaim'));
    const at = clock.now().toISOString();
    return builder.document(at, { pods: at, nodes: at, nodeClaims: at });
  };
  const source: SummarySource = {
    read: async () => readSummaryDocument(encodeSummaryDocument(document())),
    readIndex: async () => readSummaryIndex(encodeSummaryIndex(summaryIndexOf(document()))),
  };
  const lists: string[] = [];
  const counted: Cluster = {
    ...cluster,
    nodeInfos: (options) => {
      lists.push('nodes');
      return cluster.nodeInfos(options);
    },
    nodes: () => {
      lists.push('nodes');
      return cluster.nodes();
    },
    nodeClaims: (options) => {
      lists.push('nodeClaims');
      return cluster.nodeClaims(options);
    },
  };
  const decorated = withClusterSummary(counted, { source, clock, logger });
  const provisioner = provisionerSteps(world, logger, {
    ports: { cluster: decorated },
    config: { batchIdleMs: 0, batchMaxMs: 0 },
  });
  return { world, lines, lists, decorated, provisioner };
}

describe('a provisioner run with nothing pending', () => {
  it('reads no list of Nodes or NodeClaims when the index says all is settled', async () => {
    const w = setup();
    const result = await w.provisioner.provision('run-1');
    expect(result).toEqual({ kind: 'skipped', why: 'no provisionable pods' });
    expect(w.lists).toEqual([]);
    expect(w.decorated.summaryUse()).toEqual({ fromSummary: 0, direct: 0, fromIndex: 1 });
    expect(w.lines.find((l) => l['decision'] === 'skip')).toMatchObject({
      reason: 'no provisionable pods',
      nodes: 'settled (cluster summary index)',
    });
  });

  it('launches a NodeClaim that waits for it when the index counts one', async () => {
    const w = setup();
    // The EC2NodeClasses resolved (the controllers' pass), then a replacement the disruption
    // controller created and did not launch.
    await w.provisioner.reconcileLifecycle('controllers-1');
    await w.world.cluster.createNodeClaim(
      newNodeClaim('replacement', {
        nodePool: { name: 'on-demand', uid: 'on-demand-uid' },
        requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m6i.large'] }],
      }),
    );
    const result = await w.provisioner.provision('run-1');
    expect(w.lists).toContain('nodeClaims');
    expect(
      result.kind === 'provisioned'
        ? result.claims.map((c) => [c.kind, 'nodeClaim' in c ? c.nodeClaim : undefined])
        : result,
    ).toEqual([['launched', 'replacement']]);
  });

  it('reads the lists as before on a run a queue message asked for', async () => {
    const w = setup();
    addPendingPod(w.world.cluster, 'web-1');
    await w.provisioner.provision('run-1');
    const before = w.decorated.summaryUse().fromIndex;
    await w.provisioner.provision('run-2', 'queue');
    expect(w.decorated.summaryUse().fromIndex).toBe(before);
  });
});
