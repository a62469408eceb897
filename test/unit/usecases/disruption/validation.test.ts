import { describe, expect, it } from 'vitest';
import type { NodeClaimPlan, Pod } from '../../../../shared/core/index.ts';
import type { ClusterNode, ClusterNodeClaim } from '../../../../shared/ports/cluster.ts';
import type { CandidateSet } from '../../../../shared/usecases/disruption/candidates.ts';
import { evaluateConsolidation } from '../../../../shared/usecases/disruption/consolidation.ts';
import { drift } from '../../../../shared/usecases/disruption/drift.ts';
import { emptiness } from '../../../../shared/usecases/disruption/emptiness.ts';
import type {
  DisruptionCandidate,
  DisruptionCommand,
  SimulateScheduling,
} from '../../../../shared/usecases/disruption/method.ts';
import { singleNodeConsolidation } from '../../../../shared/usecases/disruption/single-node.ts';
import { type ValidateInput, validateCommand } from '../../../../shared/usecases/disruption/validation.ts';
import {
  COMMAND_ANNOTATION,
  type CommandRecord,
  encodeCommand,
} from '../../../../shared/usecases/state/command-record.ts';
import { SMALL_TYPES } from '../../core/fixtures.ts';
import { plan, pod } from '../provisioning/builders.ts';
import {
  boundPod,
  candidate,
  clusterNode,
  condition,
  iso,
  nodeClaim,
  READY_CONDITIONS,
  simulatedCluster,
  simulation,
  T0,
} from './builders.ts';

// A graceful command checked again after its validation wait, as Karpenter's validator: it is
// rejected when a candidate changed or the re-simulation no longer yields the same command;
// emptiness keeps the candidates still valid. The simulation schedules the pending pods with the
// candidates' pods, so a command cannot take the room they were about to get.

const CONSOLIDATABLE = [...READY_CONDITIONS, condition('Consolidatable')];

/** A consolidatable candidate with one pod, at 0.096 $/h. */
const busy = (name: string, pods: readonly Pod[] = [boundPod(`${name}-pod`)]): DisruptionCandidate => ({
  ...candidate(name, { pods, conditions: CONSOLIDATABLE }),
  pricePerHour: 0.096,
});
const empty = (name: string): DisruptionCandidate => candidate(name, { conditions: CONSOLIDATABLE });

const fresh = (candidates: readonly DisruptionCandidate[], excluded: CandidateSet['excluded'] = []) => ({
  candidates,
  excluded,
  counts: new Map(),
  poolTotals: new Map(),
  spotFailedAtMs: new Map(),
});

/** A replacement plan in NodePool `default` that may launch as `types`. */
const replacementOf = (name: string, types: readonly string[]): NodeClaimPlan =>
  plan({
    name,
    nodePoolName: 'default',
    instanceTypes: types.map((t) => ({ name: t, priceUsdPerHour: 0.05 })),
  });

const consolidate = (
  candidates: readonly DisruptionCandidate[],
  replacements: readonly NodeClaimPlan[] = [],
) =>
  ({
    method: singleNodeConsolidation,
    reason: 'Underutilized',
    candidates,
    replacements,
  }) satisfies DisruptionCommand;

function validate(o: Partial<ValidateInput> & Pick<ValidateInput, 'command'>) {
  return validateCommand({
    fresh: fresh(o.command.candidates),
    allowed: new Map([['default', 10]]),
    simulate: simulation(),
    nowMs: T0,
    ...o,
  });
}

describe('a consolidation command validated after its wait', () => {
  it('is rejected when a candidate was deleted meanwhile, counting every candidate as failed', () => {
    const [a, b] = [busy('a'), busy('b')];
    const verdict = validate({ command: consolidate([a, b]), fresh: fresh([a]) });
    expect(verdict).toEqual({
      kind: 'invalid',
      why: 'nodeClaim b is no longer a disruption candidate',
      failed: 2,
    });
  });

  it('is rejected when a candidate is now nominated for pending pods', () => {
    const a = busy('a');
    const verdict = validate({
      command: consolidate([a]),
      fresh: fresh(
        [],
        [
          {
            nodeClaim: a.nodeClaim,
            node: a.node,
            kind: 'nominated',
            why: 'node is nominated for pending pods',
          },
        ],
      ),
    });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: 'nodeClaim a is no longer a candidate: node is nominated for pending pods',
    });
  });

  it('is rejected when a pod now blocks a candidate', () => {
    const a = busy('a');
    const blocked = {
      ...a,
      blockers: [
        {
          pod: 'apps/a-pod',
          kind: 'doNotDisrupt' as const,
          why: 'pod apps/a-pod has karpenter.sh/do-not-disrupt',
        },
      ],
    };
    const verdict = validate({ command: consolidate([a]), fresh: fresh([blocked]) });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: expect.stringContaining('is blocked now: pod apps/a-pod'),
    });
  });

  it('is rejected when its candidates are now over their NodePool budget', () => {
    const [a, b] = [busy('a'), busy('b')];
    const verdict = validate({ command: consolidate([a, b]), allowed: new Map([['default', 1]]) });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: "nodeClaim b would exceed nodePool default's disruption budget",
      failed: 2,
    });
  });

  it('is rejected when its pods would no longer all have a place', () => {
    const a = busy('a');
    const verdict = validate({ command: consolidate([a]), simulate: simulation({ unschedulableOn: ['a'] }) });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: expect.stringContaining('1 pods would have no place now'),
    });
  });

  it('is rejected when a delete became a replace', () => {
    const a = busy('a');
    const simulate = simulation({ replacements: [replacementOf('r', ['c.large'])] });
    expect(validate({ command: consolidate([a]), simulate })).toMatchObject({
      kind: 'invalid',
      why: 'a delete became a replace: the pods need 1 new nodes now',
    });
  });

  it('is rejected when the re-plan needs more replacement nodes than the command launches', () => {
    const a = busy('a');
    const simulate = simulation({
      replacements: [replacementOf('r1', ['c.large']), replacementOf('r2', ['c.large'])],
    });
    const verdict = validate({ command: consolidate([a], [replacementOf('r', ['c.large'])]), simulate });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: 'the pods need 2 new nodes now, the command launches 1',
    });
  });

  it('is rejected when a replacement is no longer needed (a better command may exist)', () => {
    const a = busy('a');
    const verdict = validate({ command: consolidate([a], [replacementOf('r', ['c.large'])]) });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: "the pods need 0 new nodes now, fewer than the command's 1",
    });
  });

  it("is rejected when an instance type the command would launch no longer fits the pods (not among the re-plan's)", () => {
    const a = busy('a');
    const simulate = simulation({ replacements: [replacementOf('now', ['m.xlarge', 'm.large'])] });
    const verdict = validate({
      command: consolidate([a], [replacementOf('r', ['c.large', 'm.large'])]),
      simulate,
    });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: "the replacement's instance types [c.large, m.large] are not all among those that fit the pods now [m.xlarge, m.large]",
    });
  });

  it('holds when the re-plan still allows every type of the replacement, and keeps the original replacement', () => {
    const a = busy('a');
    const original = replacementOf('r', ['c.large', 'm.large']);
    const simulate = simulation({ replacements: [replacementOf('now', ['c.large', 'm.large', 'm.xlarge'])] });
    const verdict = validate({ command: consolidate([a], [original]), simulate });
    expect(verdict.kind).toBe('valid');
    if (verdict.kind !== 'valid') return;
    expect(verdict.command.replacements).toEqual([original]);
    expect(verdict.dropped).toEqual([]);
  });
});

describe('an emptiness command validated after its wait', () => {
  const command = (candidates: readonly DisruptionCandidate[]): DisruptionCommand => ({
    method: emptiness,
    reason: 'Empty',
    candidates,
    replacements: [],
  });
  const [a, b, c, d] = [empty('a'), empty('b'), empty('c'), empty('d')];
  const base = { simulate: simulation() };

  it('keeps the candidates still empty and within budget, and drops the others', () => {
    const withPod = { ...b, reschedulablePods: [boundPod('arrived')] };
    const verdict = validate({
      ...base,
      command: command([a, b, c, d]),
      fresh: fresh(
        [a, withPod, d],
        [
          {
            nodeClaim: c.nodeClaim,
            node: c.node,
            kind: 'nominated',
            why: 'node is nominated for pending pods',
          },
        ],
      ),
    });
    expect(verdict).toEqual({
      kind: 'valid',
      command: command([a, d]),
      dropped: [
        { nodeClaim: 'b', why: 'is no longer a candidate for emptiness' },
        { nodeClaim: 'c', why: 'is no longer a candidate: node is nominated for pending pods' },
      ],
    });
  });

  it('keeps only what the budget allows now, in the command order', () => {
    const verdict = validate({ ...base, command: command([a, b, c]), allowed: new Map([['default', 2]]) });
    expect(verdict).toMatchObject({
      kind: 'valid',
      command: { candidates: [a, b] },
      dropped: [{ nodeClaim: 'c', why: "would exceed nodePool default's disruption budget" }],
    });
  });

  it('is rejected when no candidate is still valid', () => {
    const verdict = validate({ ...base, command: command([a, b]), fresh: fresh([]) });
    expect(verdict).toEqual({
      kind: 'invalid',
      why: 'nodeClaim a is no longer a disruption candidate (and 1 more candidates no longer valid)',
      failed: 2,
    });
  });
});

describe('pending pods in the disruption simulation', () => {
  const GiB = 1024 ** 3;
  // A node with 4 CPUs, half of them used, beside the candidate whose 1.5-CPU pod would move there.
  const keep: ClusterNode = { ...clusterNode('node-keep', { pods: [pod('busy', 2000)] }) };
  const moving = { ...busy('c', [pod('moving', 1500)]) };

  function simulateWith(
    pending: readonly Pod[],
    o: { readonly keepNode?: ClusterNode; readonly more?: readonly ClusterNodeClaim[] } = {},
  ): SimulateScheduling {
    return simulatedCluster({
      nodes: [o.keepNode ?? keep, moving.node],
      nodeClaims: [nodeClaim('keep'), moving.nodeClaim, ...(o.more ?? [])],
      pending,
    });
  }
  const deleteMoving = consolidate([moving]);

  it('without them, the candidate is deleted: its pod fits the other node', () => {
    const simulate = simulateWith([]);
    expect(simulate([moving])).toMatchObject({ nodeClaims: [], unschedulable: [], pendingOnlyNodeClaims: 0 });
    expect(validate({ command: deleteMoving, simulate }).kind).toBe('valid');
  });

  it('a pending pod that takes the room the moved pod would use makes the delete invalid', () => {
    const simulate = simulateWith([pod('waiting', 1500)]);
    const verdict = validate({ command: deleteMoving, simulate });
    expect(verdict).toMatchObject({
      kind: 'invalid',
      why: 'a delete became a replace: the pods need 1 new nodes now',
    });
    // Decided now, consolidation does not plan on that room either.
    const decided = singleNodeConsolidation.computeCommands([moving], new Map([['default', 1]]), simulate, {
      instanceTypes: () => SMALL_TYPES,
      poolTotals: new Map(),
      nowMs: T0,
    });
    expect(decided.filter((c) => c.replacements.length === 0)).toEqual([]);
  });

  it('a new node only a pending pod needs keeps consolidation from acting, and is no drift replacement', () => {
    // 2.5 CPUs do not fit the other node's free 2: the provisioner's node, not the command's.
    const simulate = simulateWith([pod('big', 2500)]);
    expect(simulate([moving])).toMatchObject({ nodeClaims: [], unschedulable: [], pendingOnlyNodeClaims: 1 });
    expect(validate({ command: deleteMoving, simulate })).toMatchObject({
      kind: 'invalid',
      why: 'a delete became a replace: the pods need 1 new nodes now',
    });
    const context = { instanceTypes: () => SMALL_TYPES, poolTotals: new Map(), nowMs: T0 };
    expect(evaluateConsolidation(singleNodeConsolidation, [moving], simulate, context)).toEqual({
      kind: 'invalid',
      why: 'pending pods would need 1 new nodes',
    });
    const drifted = {
      ...moving,
      nodeClaim: {
        ...moving.nodeClaim,
        status: { ...moving.nodeClaim.status, conditions: [...CONSOLIDATABLE, condition('Drifted')] },
      },
    };
    expect(drift.computeCommands([drifted], new Map([['default', 1]]), simulate)).toEqual([
      expect.objectContaining({ method: drift, replacements: [] }),
    ]);
  });

  it("the candidates' pods do not go to capacity the provisioner launched for pending pods, but may go to a replacement", () => {
    const full = clusterNode('node-keep', { pods: [pod('busy', 4000)] });
    const launched = nodeClaim('coming', { nodeName: null, conditions: [condition('Launched')] });
    const coming: ClusterNodeClaim = {
      ...launched,
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m.xlarge'] }],
      status: { ...launched.status, allocatable: { cpu: 4000, memory: 16 * GiB, pods: 110 } },
    };
    const onItsWay = simulateWith([], { keepNode: full, more: [coming] })([moving]);
    expect(onItsWay.unschedulable).toEqual([
      expect.objectContaining({
        message: 'would schedule against nodeClaim coming, launched for pending pods',
      }),
    ]);
    const record: CommandRecord = {
      id: 'x',
      method: 'single-node',
      reason: 'Underutilized',
      candidates: ['gone'],
      replacements: ['coming'],
      startedAt: iso(T0),
    };
    const replacing = { ...coming, annotations: { [COMMAND_ANNOTATION]: encodeCommand(record) } };
    expect(simulateWith([], { keepNode: full, more: [replacing] })([moving])).toMatchObject({
      nodeClaims: [],
      unschedulable: [],
    });
  });

  it('a pending pod that fits beside the moved pod leaves the delete valid', () => {
    const simulate = simulateWith([pod('small', 200)]);
    expect(simulate([moving])).toMatchObject({ nodeClaims: [], unschedulable: [], pendingOnlyNodeClaims: 0 });
    expect(validate({ command: deleteMoving, simulate }).kind).toBe('valid');
  });

  it('a pending pod that still fits nowhere does not invalidate it', () => {
    const simulate = simulateWith([pod('huge', 64_000)]);
    expect(simulate([moving])).toMatchObject({ nodeClaims: [], unschedulable: [], pendingOnlyNodeClaims: 0 });
    expect(validate({ command: deleteMoving, simulate }).kind).toBe('valid');
  });
});
