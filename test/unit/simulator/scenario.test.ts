import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  mergePatch,
  parseDurationMs,
  parseScenario,
  ScenarioError,
  type ScenarioProblem,
} from '../../../shared/simulator/scenario.ts';

const examples = path.resolve(import.meta.dirname, '../../../examples');

const NODE_CLASS = `ec2NodeClasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata:
      name: default
    spec:
      role: KarpenterNodeRole-sim
      amiSelectorTerms:
        - alias: al2023@latest
      subnetSelectorTerms:
        - tags:
            karpenter.sh/discovery: sim
      securityGroupSelectorTerms:
        - tags:
            karpenter.sh/discovery: sim
`;

/** A valid scenario; `workloads` and `events` are appended as written. */
function scenario(parts: { head?: string; pool?: string; workloads?: string; events?: string } = {}): string {
  return `${parts.head ?? 'name: small\nduration: 10m\n'}${NODE_CLASS}nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata:
      name: default
    spec:
      template:
        spec:
          nodeClassRef:
            group: karpenter.k8s.aws
            kind: EC2NodeClass
            name: ${parts.pool ?? 'default'}
          requirements:
            - key: karpenter.sh/capacity-type
              operator: In
              values: [on-demand]
${parts.workloads ?? ''}${parts.events ?? ''}`;
}

const WEB = `workloads:
  - kind: Deployment
    name: web
    replicas: 3
    template:
      metadata:
        labels:
          app: web
      spec:
        containers:
          - name: web
            resources:
              requests:
                cpu: 500m
`;

function problemsOf(text: string): readonly ScenarioProblem[] {
  try {
    parseScenario(text, 'bad.yaml');
  } catch (error) {
    if (error instanceof ScenarioError) return error.problems;
    throw error;
  }
  throw new Error('the scenario parsed');
}

/** The 1-based line of the first line of `text` containing `needle`. */
function lineOf(text: string, needle: string): number {
  const index = text.split('\n').findIndex((l) => l.includes(needle));
  if (index === -1) throw new Error(`"${needle}" is not in the scenario`);
  return index + 1;
}

describe('scenario files', () => {
  it.each(readdirSync(examples).filter((f) => f.endsWith('.yaml')))('parses examples/%s', (file) => {
    const s = parseScenario(readFileSync(path.join(examples, file), 'utf8'), file);
    expect(s.name).toBe(file.replace(/\.yaml$/, ''));
    expect(s.nodePools.length).toBeGreaterThan(0);
    expect(s.workloads.length).toBeGreaterThan(0);
    expect(s.durationMs).toBeGreaterThan(0);
  });

  it('reads durations, defaults, workloads over time and events', () => {
    const s = parseScenario(
      scenario({
        head: 'name: small\nduration: 1h30m\nsampleInterval: 15s\nbootDelay: 90\nregion: us-west-2\n',
        workloads: `${WEB}    disruptionBudget:
      maxUnavailable: 50%
    scale:
      - at: 20m
        replicas: 9
      - at: 5m
        replicas: 6
  - kind: Job
    name: crunch
    at: 2m
    completions: 10
    runTime: 3m30s
    template:
      spec:
        containers:
          - name: c
            resources:
              requests:
                nvidia.com/gpu: "1"
`,
        events: `events:
  - kind: SpotInterruption
    at: 30m
    count: 2
    nodePool: default
  - kind: InsufficientCapacity
    from: 10m
    until: 40m
    instanceType: "m5.*"
    capacityType: spot
  - kind: RebalanceRecommendation
    at: 45m
    zone: us-west-2b
`,
      }),
    );
    expect(s).toMatchObject({
      name: 'small',
      region: 'us-west-2',
      zones: ['us-west-2a', 'us-west-2b', 'us-west-2c'],
      startMs: Date.parse('2026-01-01T00:00:00Z'),
      durationMs: 90 * 60_000,
      sampleIntervalMs: 15_000,
      bootDelayMs: 90_000,
    });
    expect(s.workloads[0]).toMatchObject({
      kind: 'Deployment',
      namespace: 'default',
      replicas: 3,
      disruptionBudget: { maxUnavailable: '50%' },
      scale: [
        { atMs: 5 * 60_000, replicas: 6 },
        { atMs: 20 * 60_000, replicas: 9 },
      ],
    });
    expect(s.workloads[1]).toMatchObject({
      kind: 'Job',
      atMs: 120_000,
      completions: 10,
      parallelism: 10,
      runTimeMs: 210_000,
    });
    expect(s.events).toEqual([
      { kind: 'SpotInterruption', atMs: 30 * 60_000, count: 2, nodePool: 'default' },
      {
        kind: 'InsufficientCapacity',
        fromMs: 10 * 60_000,
        untilMs: 40 * 60_000,
        instanceType: 'm5.*',
        capacityType: 'spot',
      },
      { kind: 'RebalanceRecommendation', atMs: 45 * 60_000, count: 1, zone: 'us-west-2b' },
    ]);
  });

  it("runs with the stack's settings at their defaults unless the scenario sets them", () => {
    const karpenterGates = {
      NodeRepair: false,
      ReservedCapacity: true,
      SpotToSpotConsolidation: false,
      NodeOverlay: false,
      StaticCapacity: false,
    };
    const karpenterSettings = {
      batchIdleMs: 1_000,
      batchMaxMs: 10_000,
      vmMemoryOverheadPercent: 0.075,
      reservedENIs: 0,
      amiRefreshMs: 60_000,
    };
    expect(parseScenario(scenario()).settings).toEqual({
      featureGates: karpenterGates,
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Respect',
      repackConsolidation: false,
      kubeSchedulerScoring: 'LeastAllocated',
      runawayGuard: true,
      operator: karpenterSettings,
      disruption: true,
    });
    // The deprecated name of a gate still sets it.
    const on = parseScenario(
      scenario({ head: 'name: small\nduration: 10m\nsettings:\n  spotToSpotConsolidation: true\n' }),
    );
    expect(on.settings).toEqual({
      featureGates: { ...karpenterGates, SpotToSpotConsolidation: true },
      minValuesPolicy: 'Strict',
      preferencePolicy: 'Respect',
      repackConsolidation: false,
      kubeSchedulerScoring: 'LeastAllocated',
      runawayGuard: true,
      operator: karpenterSettings,
      disruption: true,
    });
    // Flotilla's own repack is a setting of the stack, not a gate.
    expect(
      parseScenario(
        scenario({ head: 'name: small\nduration: 10m\nsettings:\n  repackConsolidation: true\n' }),
      ).settings.repackConsolidation,
    ).toBe(true);
    // So is kubeSchedulerScoring: the simulated kube-scheduler's strategy unless set apart, so that
    // a stack told otherwise than its scheduler runs can be simulated too.
    const told = (settings: string) =>
      parseScenario(
        scenario({
          head: `name: small\nduration: 10m\nkubeScheduler: { scoringStrategy: MostAllocated }\n${settings}`,
        }),
      ).settings.kubeSchedulerScoring;
    expect(told('')).toBe('MostAllocated');
    expect(told('settings:\n  kubeSchedulerScoring: LeastAllocated\n')).toBe('LeastAllocated');
    // So is the runaway guard, on unless the scenario turns it off.
    expect(
      parseScenario(scenario({ head: 'name: small\nduration: 10m\nsettings:\n  runawayGuard: false\n' }))
        .settings.runawayGuard,
    ).toBe(false);
    const gated = parseScenario(
      scenario({
        head: 'name: small\nduration: 10m\nsettings:\n  featureGates: { NodeOverlay: true, ReservedCapacity: false }\n  batchIdleDuration: 2s\n  batchMaxDuration: 20s\n  vmMemoryOverheadPercent: 0.1\n  reservedENIs: 1\n  amiRefreshInterval: 5m\n',
      }),
    );
    expect(gated.settings).toMatchObject({
      featureGates: { ...karpenterGates, NodeOverlay: true, ReservedCapacity: false },
      operator: {
        batchIdleMs: 2_000,
        batchMaxMs: 20_000,
        vmMemoryOverheadPercent: 0.1,
        reservedENIs: 1,
        amiRefreshMs: 300_000,
      },
    });
    // A gate and its deprecated name apart, an unknown gate, a setting out of Karpenter's range.
    expect(
      problemsOf(
        scenario({
          head: 'name: small\nduration: 10m\nsettings:\n  featureGates: { NodeRepair: true }\n  nodeRepair: false\n',
        }),
      ),
    ).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/nodeRepair is false but the NodeRepair feature gate is true/),
      }),
    ]);
    expect(
      problemsOf(
        scenario({ head: 'name: small\nduration: 10m\nsettings:\n  featureGates: { NodeRepairs: true }\n' }),
      ),
    ).toHaveLength(1);
    expect(
      problemsOf(
        scenario({
          head: 'name: small\nduration: 10m\nsettings:\n  vmMemoryOverheadPercent: 1.5\n  batchIdleDuration: 20s\n',
        }),
      ).map((p) => p.message),
    ).toEqual([
      expect.stringMatching(/batchMaxDuration \(10000 ms\) is shorter than batchIdleDuration/),
      expect.stringMatching(/vmMemoryOverheadPercent is 1.5/),
    ]);
    const relaxed = parseScenario(
      scenario({
        head: 'name: small\nduration: 10m\nsettings:\n  minValuesPolicy: BestEffort\n  preferencePolicy: Ignore\n',
      }),
    );
    expect(relaxed.settings).toMatchObject({ minValuesPolicy: 'BestEffort', preferencePolicy: 'Ignore' });
    expect(
      problemsOf(scenario({ head: 'name: small\nduration: 10m\nsettings:\n  minValuesPolicy: Loose\n' })),
    ).toEqual([expect.objectContaining({ field: 'settings.minValuesPolicy', line: 4 })]);
    const problems = problemsOf(
      scenario({ head: 'name: small\nduration: 10m\nsettings:\n  spotToSpotConsolidation: "yes"\n' }),
    );
    expect(problems).toEqual([
      expect.objectContaining({ field: 'settings.spotToSpotConsolidation', line: 4 }),
    ]);
    const unknown = problemsOf(
      scenario({ head: 'name: small\nduration: 10m\nsettings:\n  spotToSpot: true\n' }),
    );
    expect(unknown).toHaveLength(1);
  });

  it.each([
    ['90s', 90_000],
    ['1h', 3_600_000],
    ['2m30s', 150_000],
    ['250ms', 250],
    [45, 45_000],
    ['ten minutes', undefined],
    ['', undefined],
  ] as const)('reads the duration %j as %j ms', (input, ms) => {
    expect(parseDurationMs(input)).toBe(ms);
  });
});

describe('bad scenario files', () => {
  it('names the line, column and field of a value of the wrong type', () => {
    const text = scenario({ workloads: WEB.replace('replicas: 3', 'replicas: many') });
    const [problem] = problemsOf(text);
    expect(problem).toMatchObject({
      line: lineOf(text, 'replicas: many'),
      column: 5,
      field: 'workloads[0].replicas',
    });
    expect(problem?.message).toMatch(/number/);
  });

  it('names a duration it cannot read', () => {
    const text = scenario({ head: 'name: small\nduration: ten minutes\n' });
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({
        line: 2,
        column: 1,
        field: 'duration',
        message: expect.stringMatching(/not a duration/),
      }),
    ]);
  });

  it('refuses a field it does not know, at the object that has it', () => {
    const text = scenario({ workloads: WEB.replace('replicas: 3', 'replica: 3') });
    const problems = problemsOf(text);
    expect(problems).toContainEqual(
      expect.objectContaining({ field: 'workloads[0]', message: expect.stringMatching(/replica/) }),
    );
    expect(problems.find((p) => p.field === 'workloads[0]')?.line).toBe(lineOf(text, 'kind: Deployment'));
  });

  it('wants exactly one of minAvailable and maxUnavailable in a disruption budget', () => {
    const text = scenario({
      workloads: WEB.replace(
        'replicas: 3\n',
        'replicas: 3\n    disruptionBudget:\n      minAvailable: 1\n      maxUnavailable: 1\n',
      ),
    });
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({
        line: lineOf(text, 'disruptionBudget:'),
        field: 'workloads[0].disruptionBudget',
        message: 'set exactly one of minAvailable and maxUnavailable',
      }),
    ]);
  });

  it('points into a NodePool manifest, read by the same converter as the cluster', () => {
    const text = scenario().replace('operator: In', 'operator: Within');
    const [problem] = problemsOf(text);
    expect(problem).toMatchObject({
      line: lineOf(text, 'operator: Within'),
      field: 'nodePools[0].spec.template.spec.requirements[0].operator',
    });
    expect(problem?.message).toMatch(/Within/);
  });

  it('refuses a NodePool whose EC2NodeClass is not in the scenario', () => {
    const text = scenario({ pool: 'missing' });
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({
        line: lineOf(text, 'name: missing'),
        field: 'nodePools[0].spec.template.spec.nodeClassRef.name',
        message: expect.stringMatching(/no EC2NodeClass named "missing"/),
      }),
    ]);
  });

  it('points at a pod template quantity it cannot read', () => {
    const text = scenario({ workloads: WEB.replace('cpu: 500m', 'cpu: lots') });
    const [problem] = problemsOf(text);
    expect(problem).toMatchObject({
      line: lineOf(text, 'cpu: lots'),
      field: 'workloads[0].template.spec.containers[0].resources.requests.cpu',
    });
  });

  it('lists every problem at once, with the file name in the message', () => {
    const text = scenario({
      head: 'name: Small_Name\nduration: 10m\n',
      events: 'events:\n  - kind: SpotInterruption\n    at: 20m\n',
    });
    let message = '';
    try {
      parseScenario(text, 'bad.yaml');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`bad.yaml:1:1: name:`);
    const second = parseScenario.bind(undefined, text.replace('Small_Name', 'small'), 'bad.yaml');
    expect(second).toThrow(
      new RegExp(`bad\\.yaml:${lineOf(text, 'at: 20m')}:5: events\\[0\\]\\.at: is after the end`),
    );
  });

  it('reports YAML syntax errors with their position', () => {
    const problems = problemsOf('name: x\nduration: [10m\n');
    expect(problems[0]?.line).toBeGreaterThanOrEqual(2);
    expect(problems[0]?.field).toBe('');
  });
});

describe('NodePool, EC2NodeClass and AMI changes', () => {
  const EDITS = `events:
  - kind: UpdateNodePool
    at: 2m
    name: default
    spec:
      disruption:
        budgets:
          - nodes: "0"
            schedule: "0 9 * * *"
            duration: 8h
  - kind: UpdateEC2NodeClass
    at: 5m
    name: default
    spec:
      amiSelectorTerms:
        - alias: al2023@v20260115
  - kind: AMIRelease
    at: 6m
    version: v20260201
`;

  it('reads them with the spec fields as written', () => {
    const s = parseScenario(scenario({ events: EDITS }));
    expect(s.events).toEqual([
      {
        kind: 'UpdateNodePool',
        atMs: 120_000,
        name: 'default',
        spec: { disruption: { budgets: [{ nodes: '0', schedule: '0 9 * * *', duration: '8h' }] } },
      },
      {
        kind: 'UpdateEC2NodeClass',
        atMs: 300_000,
        name: 'default',
        spec: { amiSelectorTerms: [{ alias: 'al2023@v20260115' }] },
      },
      { kind: 'AMIRelease', atMs: 360_000, version: 'v20260201' },
    ]);
  });

  it('merges a change into the spec as kubectl patch --type merge does', () => {
    expect(
      mergePatch(
        { template: { spec: { requirements: [1, 2], nodeClassRef: 'x' } }, limits: { cpu: '1' } },
        { template: { spec: { requirements: [3] } }, limits: null },
      ),
    ).toEqual({ template: { spec: { requirements: [3], nodeClassRef: 'x' } } });
  });

  it('names the object a change refers to when there is none', () => {
    const text = scenario({
      events: EDITS.replace(
        '    name: default\n    spec:\n      disruption',
        '    name: other\n    spec:\n      disruption',
      ),
    });
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({
        line: lineOf(text, 'name: other'),
        field: 'events[0].name',
        message: 'no NodePool named "other" in nodePools',
      }),
    ]);
  });

  it('points into a change that leaves an invalid manifest', () => {
    const text = scenario({
      events: `${EDITS}  - kind: UpdateNodePool
    at: 7m
    name: default
    spec:
      template:
        spec:
          requirements:
            - { key: karpenter.sh/capacity-type, operator: Within, values: [spot] }
  - kind: UpdateEC2NodeClass
    at: 7m
    name: default
    spec:
      amiSelectorTerms: []
`,
    });
    const problems = problemsOf(text);
    expect(problems.map((p) => p.field)).toEqual([
      'events[3].spec.template.spec.requirements[0].operator',
      'events[4].spec.amiFamily',
      'events[4].spec.amiSelectorTerms',
    ]);
    expect(problems[0]?.line).toBe(lineOf(text, 'operator: Within'));
  });

  it('wants a release version such as v20260115', () => {
    const text = scenario({ events: EDITS.replace('version: v20260201', 'version: latest') });
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({
        line: lineOf(text, 'version: latest'),
        field: 'events[2].version',
        message: expect.stringMatching(/v20260115/),
      }),
    ]);
  });
});
