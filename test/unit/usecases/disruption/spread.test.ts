import { describe, expect, it } from 'vitest';
import { type FitScoring, Label, type Pod } from '../../../../shared/core/index.ts';
import type { ClusterNode } from '../../../../shared/ports/cluster.ts';
import { evaluateConsolidation } from '../../../../shared/usecases/disruption/consolidation.ts';
import type {
  DisruptionCandidate,
  DisruptionSimulation,
} from '../../../../shared/usecases/disruption/method.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { validateCommand } from '../../../../shared/usecases/disruption/validation.ts';
import { COMMAND_ANNOTATION, encodeCommand } from '../../../../shared/usecases/state/command-record.ts';
import { zoneName } from '../../core/builders.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { pod } from '../provisioning/builders.ts';
import {
  candidate,
  clusterNode,
  condition,
  nodeClaim,
  READY_CONDITIONS,
  simulatedCluster,
  T0,
} from './builders.ts';

// The pods a command moves are bound by kube-scheduler, which by default sends each to the node
// with the most room left (or, told the cluster's packs, to the fullest it fits), not where the
// disruption simulation packed them. A command whose pods that binding could leave without a node
// is not taken.

const CONSOLIDATABLE = [...READY_CONDITIONS, condition('Consolidatable')];

/** A node of 4 CPUs with `usedMillis` of them taken by one pod. */
const other = (name: string, usedMillis: number): ClusterNode =>
  clusterNode(name, { pods: usedMillis === 0 ? [] : [pod(`${name}-busy`, usedMillis)] });

const moving = (pods: readonly Pod[]): DisruptionCandidate => ({
  ...candidate('c', { pods, conditions: CONSOLIDATABLE }),
  pricePerHour: 0.096,
});

/** The cluster of `nodes` (each with its NodeClaim) and the candidate, with `pending` pods waiting. */
const simulateAround = (
  nodes: readonly ClusterNode[],
  c: DisruptionCandidate,
  pending: readonly Pod[] = [],
  scoring?: FitScoring,
) =>
  simulatedCluster({
    nodes: [...nodes, c.node],
    nodeClaims: [...nodes.map((n) => nodeClaim(n.name, { nodeName: n.name })), c.nodeClaim],
    pending,
    ...(scoring === undefined ? {} : { scoring }),
  });

const context = { instanceTypes: () => SMALL_TYPES, poolTotals: new Map(), nowMs: T0 };

/**
 * Without a waiting pod the replay finds every moved pod a node; with `waiting`, which the
 * simulation puts at `at` (a node's or in-flight NodeClaim's name), it leaves out `left`.
 */
function expectWaitingLeavesOut(
  around: (pending: readonly Pod[]) => DisruptionSimulation,
  waiting: Pod,
  at: { readonly nodeName: string } | { readonly nodeClaimName: string },
  left: readonly string[],
): void {
  expect(around([]).kubeSchedulerLeftovers?.()).toEqual([]);
  const result = around([waiting]);
  expect(result.unschedulable).toEqual([]);
  expect(result.placements).toContainEqual(
    expect.objectContaining({ ...at, pod: expect.objectContaining({ name: waiting.name }) }),
  );
  expect((result.kubeSchedulerLeftovers?.() ?? []).map((u) => u.pod.name)).toEqual(left);
}

describe("kube-scheduler's spreading in the disruption simulation", () => {
  // One node with 3 CPUs free, one with 2: the 3-CPU pod fits only the second (by name). Packed
  // largest first (as the simulation plans) everything fits; bound smallest first, each small pod
  // goes to the node with more room, and the large pod finds 2 CPUs at most.
  const nodes = [other('a-tight', 2000), other('b-roomy', 1000)];
  const packedOnly = () => moving([pod('large', 3000), pod('small-a', 500), pod('small-b', 500)]);

  it('does not delete a node whose pods fit only when packed', () => {
    const c = packedOnly();
    const result = simulateAround(nodes, c)([c]);
    // The simulation itself places every pod (drift, which does not ask further, goes ahead).
    expect(result).toMatchObject({ nodeClaims: [], unschedulable: [] });
    const leftovers = result.kubeSchedulerLeftovers?.() ?? [];
    expect(leftovers.map((u) => u.pod.name)).toEqual(['large']);
    expect(leftovers[0]?.message).toBe(
      'kube-scheduler, binding pods to the nodes with the most room, could leave it without a node',
    );
    expect(evaluateConsolidation(singleNodeConsolidation, [c], simulateAround(nodes, c), context)).toEqual({
      kind: 'invalid',
      why: '1 pods would have no place (apps/large: kube-scheduler, binding pods to the nodes with the most room, could leave it without a node)',
    });
  });

  it('abandons such a command at its validation', () => {
    const c = packedOnly();
    const command = {
      method: singleNodeConsolidation,
      reason: 'Underutilized',
      candidates: [c],
      replacements: [],
    } as const;
    const verdict = validateCommand({
      command,
      fresh: {
        candidates: [c],
        excluded: [],
        counts: new Map(),
        poolTotals: new Map(),
        spotFailedAtMs: new Map(),
      },
      allowed: new Map([['default', 10]]),
      simulate: simulateAround(nodes, c),
      nowMs: T0,
    });
    expect(verdict).toMatchObject({ kind: 'invalid' });
    expect(verdict.kind === 'invalid' && verdict.why).toContain(
      '(apps/large: kube-scheduler, binding pods to the nodes with the most room, could leave it without a node)',
    );
  });

  it('deletes it when the pods fit in any order', () => {
    // With one small pod, the large one still finds the 3 CPUs it needs after it.
    const c = moving([pod('large', 2500), pod('small', 500)]);
    expect(simulateAround(nodes, c)([c]).kubeSchedulerLeftovers?.()).toEqual([]);
    const evaluation = evaluateConsolidation(singleNodeConsolidation, [c], simulateAround(nodes, c), context);
    expect(evaluation.kind).toBe('command');
    expect(evaluation.kind === 'command' && evaluation.command.replacements).toEqual([]);
  });

  it("replays with the cluster's strategy: MostAllocated packs what LeastAllocated spreads", () => {
    // The pods packed-only fit: bound to the fullest node first, the small ones fill a-tight and
    // the large one finds b-roomy's 3 CPUs.
    const c = packedOnly();
    expect(simulateAround(nodes, c, [], 'MostAllocated')([c]).kubeSchedulerLeftovers?.()).toEqual([]);
    const evaluation = evaluateConsolidation(
      singleNodeConsolidation,
      [c],
      simulateAround(nodes, c, [], 'MostAllocated'),
      context,
    );
    expect(evaluation.kind).toBe('command');
  });

  it('refuses under MostAllocated what only spreading would place', () => {
    // 1 and 1.5 CPUs free. Packing, the 0.5-CPU pod fills the fuller node and the two 1-CPU pods
    // find one hole between them; spreading, it goes to the roomier node, and both 1-CPU pods fit.
    const holes = [other('a-full', 3000), other('b-half', 2500)];
    const c = moving([pod('one-a', 1000), pod('one-b', 1000), pod('half', 500)]);
    expect(simulateAround(holes, c)([c]).kubeSchedulerLeftovers?.()).toEqual([]);
    const packing = simulateAround(holes, c, [], 'MostAllocated');
    expect(packing([c]).unschedulable).toEqual([]);
    expect(evaluateConsolidation(singleNodeConsolidation, [c], packing, context)).toEqual({
      kind: 'invalid',
      why: '1 pods would have no place (apps/one-a: kube-scheduler, binding pods to the fullest nodes they fit, could leave it without a node)',
    });
  });

  it('counts the replacement a command launches as room the pods spread over', () => {
    // Both other nodes full: the pods need a new node, which kube-scheduler fills as well.
    const full = [other('full-a', 4000), other('full-b', 4000)];
    const c = moving([pod('large', 2000), pod('small', 500)]);
    const result = simulateAround(full, c)([c]);
    expect(result.nodeClaims).toHaveLength(1);
    expect(result.kubeSchedulerLeftovers?.()).toEqual([]);
  });

  it('counts pending pods where the simulation put them, before the moved ones', () => {
    // 2 and 2.5 CPUs free; a waiting pod of 1 CPU goes to the second. Replayed without it the
    // large pod finds room; with it, the two small pods leave 1 and 1.5 CPUs.
    const two = [other('a-tight', 2000), other('b-roomy', 1500)];
    const c = moving([pod('large', 2000), pod('small-a', 500), pod('small-b', 500)]);
    const around = (pending: readonly Pod[]) => simulateAround(two, c, pending)([c]);
    expectWaitingLeavesOut(around, pod('waiting', 1000), { nodeName: 'b-roomy' }, ['large']);
  });

  it('counts the pods of a node that has not initialized for topology, without sending moved pods there', () => {
    // Pods of app web spread over the three zones (maxSkew 1). Zone a: web-0 on a1 and web-2 on
    // the candidate; zone b: web-1 on b-new, which has not initialized, and b-full, which has no
    // room; zone c: web-3 on the full c-full. Without the candidate, web-2 makes zone a 2 against
    // 1 and 1: a1 takes it. Were b-new's pod not counted, zone b would be at 0, and web-2 could go
    // nowhere but zone b.
    const web = (name: string) =>
      pod(name, 1000, {
        labels: { app: 'web' },
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: Label.zone,
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { app: 'web' } },
          },
        ],
      });
    const inZone = (node: ClusterNode, zone: string, initialized = true): ClusterNode => ({
      ...node,
      labels: { ...node.labels, [Label.zone]: zoneName(zone) },
      initialized,
    });
    const a1 = inZone(clusterNode('a1', { pods: [web('web-0')] }), 'a');
    const bFull = inZone(other('b-full', 4000), 'b');
    const bNew = inZone(clusterNode('b-new', { pods: [web('web-1')] }), 'b', false);
    const cFull = inZone(clusterNode('c-full', { pods: [web('web-3'), pod('c-busy', 3000)] }), 'c');
    const base = moving([web('web-2')]);
    const c = { ...base, node: inZone(base.node, 'a') };
    const nodes = [a1, bFull, bNew, cFull];
    const result = simulateAround(nodes, c)([c]);
    expect(result).toMatchObject({ nodeClaims: [], unschedulable: [] });
    expect(result.placements).toContainEqual(
      expect.objectContaining({ nodeName: 'a1', pod: expect.objectContaining({ name: 'web-2' }) }),
    );
    expect(result.kubeSchedulerLeftovers?.()).toEqual([]);
  });

  it("counts pending pods the simulation put on a command's replacement that has no node yet", () => {
    // Command cmd1 replaces `old` by R (m.xlarge, 4 CPUs, not launched yet). A waiting pod of
    // 3.5 CPUs goes to R; the moved pods then find 3 CPUs on n1 and 0.5 on R, and the 2.8-CPU pod
    // none once the 400m one has taken n1 (the node with the most room).
    const n1 = other('n1', 1000);
    const record = encodeCommand({
      id: 'cmd1',
      method: 'single-node',
      reason: 'Underutilized',
      candidates: ['old'],
      replacements: ['R'],
      startedAt: new Date(T0).toISOString(),
    });
    const old = nodeClaim('old', { nodeName: 'node-old', annotations: { [COMMAND_ANNOTATION]: record } });
    const R = {
      ...nodeClaim('R', { nodeName: null, conditions: [] }),
      requirements: [{ key: Label.instanceType, operator: 'In' as const, values: ['m.xlarge'] }],
    };
    const c = moving([pod('a', 400), pod('b', 2800)]);
    const around = (pending: readonly Pod[]) =>
      simulatedCluster({
        nodes: [n1, clusterNode('node-old', { pods: [] }), c.node],
        nodeClaims: [nodeClaim('n1', { nodeName: 'n1' }), old, R, c.nodeClaim],
        pending,
      })([c]);
    expectWaitingLeavesOut(around, pod('waiting', 3500), { nodeClaimName: 'R' }, ['b']);
  });
});
