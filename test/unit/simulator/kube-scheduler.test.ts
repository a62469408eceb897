import { describe, expect, it } from 'vitest';
import { chooseNode, nodeScore } from '../../../shared/simulator/kube-scheduler.ts';
import { choosePreemption } from '../../../shared/simulator/preemption.ts';
import { node, pod } from '../core/builders.ts';

// The simulated kube-scheduler's choice among the nodes that fit: NodeResourcesFit's score.

const T = Date.parse('2026-01-01T00:00:00Z');
const busy = node({
  name: 'a-busy',
  cpu: '4',
  memory: '16Gi',
  initialized: true,
  boundPods: [pod({ cpu: '2', memory: '4Gi' })],
});
const idle = node({ name: 'b-idle', cpu: '4', memory: '16Gi', initialized: true });
const full = node({
  name: 'c-full',
  cpu: '4',
  memory: '16Gi',
  initialized: true,
  boundPods: [pod({ cpu: '3800m', memory: '1Gi' })],
});

describe('the simulated kube-scheduler', () => {
  it.each([
    ['LeastAllocated', 'b-idle'],
    ['MostAllocated', 'a-busy'],
  ] as const)('with %s binds a 500m pod to %s', (strategy, expected) => {
    expect(chooseNode(strategy, pod({ cpu: '500m', memory: '1Gi' }), [busy, idle], T)).toBe(expected);
  });

  it('scores by the requests left after the pod, a pod without requests counting as 100m and 200Mi', () => {
    const free = nodeScore('LeastAllocated', idle, pod({ cpu: '1', memory: '4Gi' }));
    // cpu 3/4 and memory 12/16 left: 75.
    expect(free).toBe(75);
    // cpu 97.5 (3900m of 4000m left) and memory 98.8 (16184Mi of 16384Mi), each rounded down:
    // (97 + 98) / 2, rounded down.
    expect(nodeScore('LeastAllocated', idle, pod({}))).toBe(97);
    expect(nodeScore('MostAllocated', idle, pod({ cpu: '1', memory: '4Gi' }))).toBe(25);
  });

  it('scores in whole numbers, as kube-scheduler does, which can change the node it takes', () => {
    // After a 500m / 500Mi pod, a-close would have 2801m / 2901Mi of 10 CPUs / 10000Mi taken
    // (free shares 71.99 and 70.99, so 71 and 70, score 70) and b-even 2800m / 3000Mi (72 and 70,
    // score 71). Unrounded, a-close would win with 71.49 against 71.0.
    const ten = (name: string, cpu: string, memory: string) =>
      node({ name, cpu: '10', memory: '10000Mi', initialized: true, boundPods: [pod({ cpu, memory })] });
    const close = ten('a-close', '2301m', '2401Mi');
    const even = ten('b-even', '2300m', '2500Mi');
    const incoming = pod({ cpu: '500m', memory: '500Mi' });
    expect(nodeScore('LeastAllocated', close, incoming)).toBe(70);
    expect(nodeScore('LeastAllocated', even, incoming)).toBe(71);
    expect(chooseNode('LeastAllocated', incoming, [close, even], T)).toBe('b-even');
  });

  it('never takes a node the pod does not fit, however the node scores', () => {
    // c-full would score highest under MostAllocated, but 500m does not fit in its 200m.
    expect(chooseNode('MostAllocated', pod({ cpu: '500m' }), [full, idle], T)).toBe('b-idle');
    expect(chooseNode('LeastAllocated', pod({ cpu: '5' }), [full, idle], T)).toBeUndefined();
  });

  it('breaks a tie by the node name', () => {
    const twin = node({ name: 'a-twin', cpu: '4', memory: '16Gi', initialized: true });
    expect(chooseNode('LeastAllocated', pod({ cpu: '1' }), [idle, twin], T)).toBe('a-twin');
  });
});

describe('the simulated kube-scheduler’s preemption', () => {
  const low = pod({ name: 'low', cpu: '2', memory: '1Gi' });
  const mid = pod({ name: 'mid', cpu: '2', memory: '1Gi' });
  const small = pod({ name: 'small', cpu: '1', memory: '1Gi' });
  const priorities = new Map([
    [low.uid, 1],
    [mid.uid, 50],
    [small.uid, 1],
  ]);
  const priorityOf = (p: { uid: string }) => priorities.get(p.uid) ?? 0;
  const n = (name: string, pods: ReturnType<typeof pod>[]) =>
    node({ name, cpu: '4', memory: '16Gi', initialized: true, boundPods: pods });

  it('takes the node whose victims have the lowest priority, and gives back those it can spare', () => {
    const wanted = pod({ name: 'web', cpu: '3', memory: '1Gi' });
    // On a, the mid pod (50) would go; on b, the low pod (1) goes and the small one stays.
    const chosen = choosePreemption(
      'LeastAllocated',
      wanted,
      100,
      [n('a', [mid]), n('b', [low, small])],
      priorityOf,
      T,
    );
    expect(chosen?.nodeName).toBe('b');
    // 3 cpu wanted of 4: without low (2) it fits beside small (1), which is given back.
    expect(chosen?.victims.map((v) => v.name)).toEqual(['low']);
  });

  it('preempts nothing of its own priority or above', () => {
    const wanted = pod({ name: 'web', cpu: '3', memory: '1Gi' });
    expect(choosePreemption('LeastAllocated', wanted, 50, [n('a', [mid])], priorityOf, T)).toBeUndefined();
  });
});
