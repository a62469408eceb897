import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../../shared/adapters/memory/index.ts';
import { Label } from '../../../../shared/core/index.ts';
import { balancedRejection } from '../../../../shared/usecases/disruption/balanced.ts';
import {
  balancedRejected,
  consolidationApproved,
  consolidationCandidate,
  consolidationChosen,
  consolidationRejected,
  doNotDisruptEvents,
  NODEPOOL_BLOCKED_DEDUPE_SECONDS,
  nodePoolDisruptionBlocked,
} from '../../../../shared/usecases/disruption/events.ts';
import type { DisruptionCommand } from '../../../../shared/usecases/disruption/method.ts';
import { multiNodeConsolidation } from '../../../../shared/usecases/disruption/multi-node.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { boundPod, candidate, clusterNode, pool, replacement } from './builders.ts';
import { pass, threeNodes } from './pass-world.ts';

// Karpenter's disruption Events on Karpenter's objects, with its types and dedupe keys: what a
// pod's do-not-disrupt value means, a consolidation command chosen and rejected, a node held by
// its own annotation, a NodePool held by its budget.

const NOW = Date.parse('2026-11-21T10:00:00Z');
const MINUTE = 60_000;

describe('do-not-disrupt pod Events', () => {
  it.each([
    ['"true" says nothing', 'true', NOW - MINUTE, []],
    ['no annotation says nothing', undefined, NOW - MINUTE, []],
    [
      'a value neither "true" nor a duration is ignored, with a Warning',
      'forever',
      NOW - MINUTE,
      [{ reason: 'InvalidDoNotDisruptAnnotation', type: 'Warning', dedupeValues: ['uid-p', 'forever'] }],
    ],
    [
      'a negative duration is invalid too',
      '-5m',
      NOW - MINUTE,
      [{ reason: 'InvalidDoNotDisruptAnnotation', type: 'Warning', dedupeValues: ['uid-p', '-5m'] }],
    ],
    [
      'a duration still running says until when',
      '1h',
      NOW - 10 * MINUTE,
      [
        {
          reason: 'DoNotDisruptUntil',
          type: 'Normal',
          message: expect.stringContaining('2026-11-21T10:50:00.000Z'),
          dedupeValues: ['uid-p', '2026-11-21T10:50:00.000Z'],
        },
      ],
    ],
    [
      'a duration run out says the pod may go',
      '5m',
      NOW - 10 * MINUTE,
      [{ reason: 'DoNotDisruptGracePeriodElapsed', type: 'Normal', dedupeValues: ['uid-p'] }],
    ],
    ['a pod not started yet says nothing (its protection has not begun)', '5m', undefined, []],
  ] as const)('%s', (_, value, startedAtMs, expected) => {
    const pod = boundPod('p', {
      ...(value === undefined ? {} : { doNotDisrupt: value }),
      ...(startedAtMs === undefined ? {} : { startedAtMs }),
    });
    const events = doNotDisruptEvents([{ node: clusterNode('n', { pods: [pod] }) }], NOW);
    expect(events).toEqual(
      expected.map((e) =>
        expect.objectContaining({
          ...e,
          subject: { kind: 'Pod', namespace: 'apps', name: 'p', uid: 'uid-p' },
        }),
      ),
    );
  });
});

describe('consolidation command Events', () => {
  const replace: DisruptionCommand = {
    method: singleNodeConsolidation,
    reason: 'Underutilized',
    candidates: [{ ...candidate('big'), pricePerHour: 0.4 }],
    replacements: [replacement('small')],
  };
  const remove: DisruptionCommand = {
    method: multiNodeConsolidation,
    reason: 'Underutilized',
    candidates: [
      { ...candidate('a'), pricePerHour: 0.1 },
      { ...candidate('b'), pricePerHour: 0.15 },
    ],
    replacements: [],
  };

  it('ConsolidationCandidate goes on the Node and the NodeClaim of each candidate, with the savings', () => {
    const price = replace.replacements[0]?.instanceTypes[0]?.priceUsdPerHour ?? 0;
    const events = consolidationCandidate(replace);
    expect(events.map((e) => [e.subject.kind, e.subject.name, e.type, e.reason])).toEqual([
      ['Node', 'node-big', 'Normal', 'ConsolidationCandidate'],
      ['NodeClaim', 'big', 'Normal', 'ConsolidationCandidate'],
    ]);
    for (const e of events) {
      expect(e.message).toContain('replace with 1 cheaper NodeClaim');
      expect(e.message).toContain(`$${(0.4 - price).toFixed(2)}/hour`);
      expect(e.dedupeValues).toEqual(['replace with 1 cheaper NodeClaim']);
    }
    const deletes = consolidationCandidate(remove);
    expect(deletes.map((e) => e.subject.name)).toEqual(['node-a', 'a', 'node-b', 'b']);
    expect(deletes.every((e) => e.message.includes('delete, saving $0.25/hour'))).toBe(true);
  });

  it('a saving that rests on a price the catalog only assumes says so, and which', () => {
    const toSpot: DisruptionCommand = { ...replace, replacementsAssumed: ['spot'] };
    const fromSpot: DisruptionCommand = {
      ...remove,
      candidates: remove.candidates.map((c, i) =>
        i === 0
          ? {
              ...c,
              priceAssumed: true,
              nodeClaim: { ...c.nodeClaim, labels: { [Label.capacityType]: 'spot' } },
            }
          : c,
      ),
    };
    const both: DisruptionCommand = { ...fromSpot, replacementsAssumed: ['on-demand'] };
    expect(consolidationCandidate(toSpot)[0]?.message).toMatch(
      /, saving \$0\.\d\d\/hour \(assumed spot price\)$/,
    );
    expect(consolidationCandidate(fromSpot)[0]?.message).toBe(
      'Consolidation chose this node: delete, saving $0.25/hour (assumed spot price)',
    );
    expect(consolidationRejected(both, 'nodeClaim a is nominated')[0]?.message).toBe(
      'Consolidation dropped this node at validation (delete, $0.25/hour (assumed spot and on-demand prices)): nodeClaim a is nominated',
    );
    // Known prices: no words.
    expect(consolidationCandidate(remove)[0]?.message).toBe(
      'Consolidation chose this node: delete, saving $0.25/hour',
    );
  });

  it('ConsolidationRejected says why, keyed by the command and the reason', () => {
    const events = consolidationRejected(remove, 'nodeClaim a is nominated');
    expect(events).toHaveLength(4);
    for (const e of events) {
      expect(e).toMatchObject({ type: 'Normal', reason: 'ConsolidationRejected' });
      expect(e.message).toContain('nodeClaim a is nominated');
      expect(e.dedupeValues).toEqual(['delete', 'nodeClaim a is nominated']);
    }
  });
});

describe('Balanced consolidation Events', () => {
  const verdict = { approved: true, score: 2.5, savingsFraction: 0.25, disruptionFraction: 0.1 };
  const balancedPool = (name: string) => ({
    ...pool(name, { consolidationPolicy: 'Balanced' }),
    uid: `uid-${name}`,
  });
  const single: DisruptionCommand = {
    method: singleNodeConsolidation,
    reason: 'Underutilized',
    candidates: [{ ...candidate('big', { nodePool: balancedPool('web') }), pricePerHour: 0.4 }],
    replacements: [replacement('small', 'web')],
    balanced: [{ nodePool: 'web', ...verdict }],
  };
  const several: DisruptionCommand = {
    method: multiNodeConsolidation,
    reason: 'Underutilized',
    candidates: [
      { ...candidate('a', { nodePool: balancedPool('web') }), pricePerHour: 0.1 },
      { ...candidate('b', { nodePool: balancedPool('web') }), pricePerHour: 0.1 },
    ],
    replacements: [],
    balanced: [{ nodePool: 'web', ...verdict }],
  };
  const words =
    "Balanced score 2.50 reaches the threshold 0.50 (k 2): it saves 25.0% of the NodePool's $/hour for 10.0% of its disruption";

  it('ConsolidationApproved goes on the Node and NodeClaim of a single candidate, with the score', () => {
    const events = consolidationApproved(single);
    expect(events.map((e) => [e.subject.kind, e.subject.name, e.type, e.reason])).toEqual([
      ['Node', 'node-big', 'Normal', 'ConsolidationApproved'],
      ['NodeClaim', 'big', 'Normal', 'ConsolidationApproved'],
    ]);
    for (const e of events) {
      expect(e.message).toBe(`Consolidation may replace with 1 cheaper NodeClaim: ${words}`);
      expect(e.dedupeValues).toEqual(['replace with 1 cheaper NodeClaim']);
    }
    // Chosen: its candidates first, then the score.
    expect(consolidationChosen(single).map((e) => e.reason)).toEqual([
      'ConsolidationCandidate',
      'ConsolidationCandidate',
      'ConsolidationApproved',
      'ConsolidationApproved',
    ]);
  });

  it('ConsolidationApproved says when the saving it scores rests on an assumed price', () => {
    const assumed = { ...single, replacementsAssumed: ['spot'] };
    expect(consolidationApproved(assumed)[0]?.message).toBe(
      `Consolidation may replace with 1 cheaper NodeClaim: ${words} (assumed spot price)`,
    );
    expect(consolidationApproved({ ...several, replacementsAssumed: ['spot'] })[0]?.message).toBe(
      `Consolidation may delete for 2 nodes (a, b): ${words} (assumed spot price)`,
    );
  });

  it('ConsolidationApproved of a move of several nodes goes on their NodePool, keyed by the move', () => {
    expect(consolidationApproved(several)).toEqual([
      {
        subject: { kind: 'NodePool', name: 'web', uid: 'uid-web' },
        type: 'Normal',
        reason: 'ConsolidationApproved',
        message: `Consolidation may delete for 2 nodes (a, b): ${words}`,
        dedupeValues: ['delete', 'a', 'b'],
      },
    ]);
  });

  it('no ConsolidationApproved for a command no Balanced NodePool scored', () => {
    const { balanced: _, ...unscored } = single;
    expect(consolidationApproved(unscored)).toEqual([]);
    expect(consolidationChosen(unscored).map((e) => e.reason)).toEqual([
      'ConsolidationCandidate',
      'ConsolidationCandidate',
    ]);
  });

  it("ConsolidationRejected tells a Balanced NodePool's rejection on the Node and NodeClaim, and nothing else", () => {
    const big = { ...candidate('big', { nodePool: balancedPool('web') }), pricePerHour: 0.1 };
    const why = balancedRejection(
      [{ ...big, reschedulablePods: [boundPod('p1'), boundPod('p2')] }],
      0.1,
      new Map([['web', { pricePerHour: 1, disruptionCost: 10 }]]),
    );
    expect(why).toBeDefined();
    const events = balancedRejected(big.nodeClaim, big.node.name, why ?? '');
    expect(events.map((e) => [e.subject.kind, e.subject.name, e.type, e.reason])).toEqual([
      ['Node', 'node-big', 'Normal', 'ConsolidationRejected'],
      ['NodeClaim', 'big', 'Normal', 'ConsolidationRejected'],
    ]);
    for (const e of events) {
      expect(e.message).toBe(`Consolidation keeps this node: ${why}`);
      expect(e.message).toContain('Balanced score 0.33 is below the threshold 0.50 (k 2)');
      expect(e.dedupeValues).toEqual(['Balanced', why]);
    }
    // Quoted inside a longer reason, it is still the Balanced rejection.
    expect(
      balancedRejected(
        big.nodeClaim,
        big.node.name,
        `the pods need 2 new nodes, and on one new node: ${why}`,
      ),
    ).toHaveLength(2);
    expect(balancedRejected(big.nodeClaim, big.node.name, "can't replace with a cheaper node")).toEqual([]);
  });
});

describe('disruption Events over whole passes (in-memory cluster and cloud)', () => {
  it('a NodePool blocked by its budget is told once a minute per disruption reason', () => {
    expect(nodePoolDisruptionBlocked('web', 'Drifted')).toMatchObject({
      subject: { kind: 'NodePool', name: 'web' },
      type: 'Normal',
      reason: 'DisruptionBlocked',
      dedupeValues: ['Drifted'],
      dedupeSeconds: NODEPOOL_BLOCKED_DEDUPE_SECONDS,
    });
    expect(NODEPOOL_BLOCKED_DEDUPE_SECONDS).toBe(60);
  });

  it('tells do-not-disrupt pods and a do-not-disrupt node on their objects, each once within its window', async () => {
    const world = await threeNodes();
    const { cluster, clock } = world;
    const [claim] = (await cluster.nodeClaims()).items;
    const nodeName = claim?.status.nodeName ?? '';
    const others = (await cluster.nodes()).items.map((n) => n.name).filter((n) => n !== nodeName);
    // Small pods bound beside the spread ones, started 10 minutes ago, each with a value.
    const startTime = new Date(clock.now().getTime() - 10 * MINUTE).toISOString();
    for (const [name, value, node] of [
      ['bad', 'forever', others[0]],
      ['held', '1h', others[0]],
      ['done', '5m', others[1]],
    ] as const) {
      cluster.create({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default', annotations: { 'karpenter.sh/do-not-disrupt': value } },
        spec: {
          nodeName,
          ...(node === undefined ? {} : { nodeName: node }),
          containers: [{ name: 'app', image: 'app', resources: { requests: { cpu: '10m' } } }],
        },
        status: { phase: 'Running', startTime },
      });
    }
    // The user keeps the first node.
    await cluster.patchNode(nodeName, { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });

    await pass(world);
    const mine = (reason: string) =>
      cluster
        .events()
        .filter((e) => e.event.reason === reason)
        .map((e: StoredEvent) => [e.event.subject.kind, e.event.subject.name, e.event.type, e.count]);
    expect(mine('InvalidDoNotDisruptAnnotation')).toEqual([['Pod', 'bad', 'Warning', 1]]);
    expect(mine('DoNotDisruptUntil')).toEqual([['Pod', 'held', 'Normal', 1]]);
    expect(mine('DoNotDisruptGracePeriodElapsed')).toEqual([['Pod', 'done', 'Normal', 1]]);
    expect(mine('DisruptionBlocked')).toEqual(
      expect.arrayContaining([
        ['Node', nodeName, 'Normal', 1],
        ['NodeClaim', claim?.name, 'Normal', 1],
      ]),
    );
    const blocked = cluster
      .events()
      .filter((e) => e.event.reason === 'DisruptionBlocked' && e.event.subject.name === nodeName);
    expect(blocked[0]?.event.message).toContain('karpenter.sh/do-not-disrupt');
    // Named by uid too, so that `kubectl describe` finds them.
    const node = (await cluster.nodes()).items.find((n) => n.name === nodeName);
    expect(blocked[0]?.event.subject.uid).toBe(node?.uid);
    expect(blocked[0]?.event.subject.uid).toBeTruthy();

    // A pass a minute later repeats nothing; one past the window counts each again on its Event.
    clock.advance(MINUTE);
    await pass(world);
    expect(mine('InvalidDoNotDisruptAnnotation')).toEqual([['Pod', 'bad', 'Warning', 1]]);
    expect(mine('DoNotDisruptGracePeriodElapsed')).toEqual([['Pod', 'done', 'Normal', 1]]);
    clock.advance(10 * MINUTE);
    await pass(world);
    expect(mine('InvalidDoNotDisruptAnnotation')).toEqual([['Pod', 'bad', 'Warning', 2]]);
    expect(mine('DoNotDisruptGracePeriodElapsed')).toEqual([['Pod', 'done', 'Normal', 2]]);
    expect(mine('DisruptionBlocked')).toEqual(
      expect.arrayContaining([
        ['Node', nodeName, 'Normal', 2],
        ['NodeClaim', claim?.name, 'Normal', 2],
      ]),
    );
  });
});
