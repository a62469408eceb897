// controller's own test: NodeClaim status is written as the provisioner and lifecycle would.
import { describe, expect, it } from 'vitest';
import { makeMemoryCluster } from '../../../../shared/adapters/memory/index.ts';
import { makeManualClock } from '../../../../shared/ports/clock.ts';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { LAUNCH_TIMEOUT_MS, reconcileLifecycle } from '../../../../shared/usecases/lifecycle/lifecycle.ts';
import { field, forgedSummaryCluster, named, type RawObject } from '../../../fixtures/forged-summary.ts';
import { quietMetrics } from '../../../fixtures/metrics.ts';
import { newNodeClaim } from '../../../fixtures/node-claims.ts';

// The NodeClaim lifecycle over a forged cluster summary: a launch or registration timeout deletes
// a NodeClaim only when it is timed out as the API server has it and its Nodes.

const LONG_AGO = '2020-01-01T00:00:00Z';
const TRUE = (type: string) => ({ type, status: 'True' as const, reason: type, message: '' });

function world() {
  const clock = makeManualClock(new Date('2026-11-26T12:00:00Z'));
  const memory = makeMemoryCluster({ clock });
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger({}, { now: () => clock.now(), sink: (l) => lines.push(JSON.parse(l)) });
  const forged = forgedSummaryCluster(memory, clock, logger);
  const pass = () =>
    reconcileLifecycle({ cluster: forged.cluster, logger, metrics: quietMetrics }, clock.now());
  return { clock, memory, forged, pass };
}

describe('the NodeClaim lifecycle over a forged cluster summary', () => {
  it('does not delete a NodeClaim created a minute ago that the summary shows created years ago', async () => {
    const w = world();
    await w.memory.createNodeClaim(newNodeClaim('young'));
    w.clock.advance(60_000);
    w.forged.publish({
      nodeClaims: (claims) => {
        field(named(claims, 'young'), 'metadata')['creationTimestamp'] = LONG_AGO;
      },
    });
    expect((await w.pass()).deleted).toEqual([]);
    expect((await w.memory.nodeClaim('young'))?.deleting).toBe(false);
  });

  it('does not delete a registered NodeClaim the summary shows launched years ago, unregistered and without its Node', async () => {
    const w = world();
    const providerId = 'aws:///us-east-1a/i-0live';
    await w.memory.createNodeClaim(newNodeClaim('live'));
    w.memory.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-live' },
      spec: { providerID: providerId },
    });
    w.memory.setNodeReady('node-live', true);
    await w.memory.patchNodeClaimStatus('live', {
      providerId,
      nodeName: 'node-live',
      conditions: [TRUE('Launched'), TRUE('Registered'), TRUE('Initialized')],
    });
    w.clock.advance(60 * 60_000);
    w.forged.publish({
      nodeClaims: (claims) => {
        const status = field(named(claims, 'live'), 'status');
        status['conditions'] = (status['conditions'] as RawObject[])
          .filter((c) => c['type'] === 'Launched')
          .map((c) => ({ ...c, lastTransitionTime: LONG_AGO }));
      },
      nodes: (nodes) => nodes.splice(0, nodes.length),
    });
    expect((await w.pass()).deleted).toEqual([]);
    expect((await w.memory.nodeClaim('live'))?.deleting).toBe(false);
  });

  it('still deletes a NodeClaim that did not launch in time as the API server has it', async () => {
    const w = world();
    await w.memory.createNodeClaim(newNodeClaim('stuck'));
    w.clock.advance(LAUNCH_TIMEOUT_MS);
    w.forged.publish({});
    expect((await w.pass()).deleted).toEqual([{ name: 'stuck', reason: 'launch_timeout' }]);
    expect((await w.memory.nodeClaim('stuck'))?.deleting).toBe(true);
  });
});
