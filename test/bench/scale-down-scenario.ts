// The single-candidate consolidation case: one c6a NodePool, a Deployment of (1 cpu, 2 GiB) pods
// scaled down at 10 minutes, so that one large node is left with a few pods. Shared by the
// benchmark (consolidation-single.ts) and the simulator's unit test.

/**
 * A scenario of `replicas` web pods on a c6a NodePool of `capacityType` (minimum savings
 * `minSavings`), scaled to `scaleTo` at 10m when given, run for `duration`; a spot node is
 * replaced by spot only with `spotToSpot`; Flotilla's repack runs only with `repack`.
 */
export function scaleDownScenario(o: {
  readonly capacityType: 'on-demand' | 'spot';
  readonly replicas: number;
  readonly scaleTo?: number;
  readonly minSavings?: string;
  readonly duration?: string;
  /** The stack's spotToSpotConsolidation (off by default, as Karpenter's feature gate). */
  readonly spotToSpot?: boolean;
  /** The stack's repackConsolidation (off by default: Karpenter's methods alone). */
  readonly repack?: boolean;
}): string {
  const settings = [
    ...(o.spotToSpot === true ? ['spotToSpotConsolidation: true'] : []),
    ...(o.repack === true ? ['repackConsolidation: true'] : []),
  ];
  const nodeClassSpec =
    '{ role: R, amiSelectorTerms: [{ alias: al2023@latest }], subnetSelectorTerms: [{ tags: { k: v } }], securityGroupSelectorTerms: [{ tags: { k: v } }] }';
  return `name: scale-down
duration: ${o.duration ?? '45m'}
bootDelay: 30s
${settings.length === 0 ? '' : `settings: { ${settings.join(', ')} }\n`}ec2NodeClasses: [{ apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, metadata: { name: default }, spec: ${nodeClassSpec} }]
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: default, annotations: { flotilla.io/consolidation-min-savings: "${o.minSavings ?? '10%'}" } }
    spec:
      template:
        spec:
          nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
          requirements:
            - { key: karpenter.sh/capacity-type, operator: In, values: [${o.capacityType}] }
            - { key: karpenter.k8s.aws/instance-family, operator: In, values: [c6a] }
workloads:
  - kind: Deployment
    name: web
    replicas: ${o.replicas}
${o.scaleTo === undefined ? '' : `    scale: [{ at: 10m, replicas: ${o.scaleTo} }]\n`}    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: "1", memory: 2Gi } }
`;
}
