// Scenario texts the simulator tests build on.

/**
 * The EC2NodeClass `default` (AMI `alias`) and the NodePool `default` on it with these requirement
 * items (each in YAML flow style), `spec` lines (indented six spaces) before its template, and
 * `templateSpec` lines (indented ten spaces) under its template's spec before the requirements,
 * and the NodePool's `annotations` (in YAML flow style).
 */
export const defaultPoolYaml = (
  requirements: readonly string[],
  spec = '',
  templateSpec = '',
  alias = 'al2023@latest',
  annotations?: string,
) => `ec2NodeClasses:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: { name: default }
    spec:
      role: R
      amiSelectorTerms: [{ alias: ${alias} }]
      subnetSelectorTerms: [{ tags: { k: v } }]
      securityGroupSelectorTerms: [{ tags: { k: v } }]
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: { name: default${annotations === undefined ? '' : `, annotations: ${annotations}`} }
    spec:
${spec}      template:
        spec:
          nodeClassRef: { group: karpenter.k8s.aws, kind: EC2NodeClass, name: default }
${templateSpec}          requirements:
${requirements.map((r) => `            - ${r}\n`).join('')}`;

/** A NodePool `default` over m6i and c6i on-demand, with `disruption` and `workloads` as given. */
export const small = (parts: {
  disruption?: string;
  workloads: string;
  events?: string;
  duration?: string;
}) => `name: small
duration: ${parts.duration ?? '30m'}
bootDelay: 30s
${defaultPoolYaml([
  '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, c6i] }',
  '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge] }',
  '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
])}${parts.disruption ?? ''}${parts.workloads}${parts.events ?? ''}`;

/** `replicas` pods of 3 cpu (or `cpu`): one per xlarge node. */
export const web = (replicas: number, scale = '', cpu = '"3"') => `workloads:
  - kind: Deployment
    name: web
    replicas: ${replicas}
${scale}    template:
      metadata: { labels: { app: web } }
      spec:
        containers:
          - name: c
            resources: { requests: { cpu: ${cpu} } }
`;

/**
 * An on-demand c8i.2xlarge node `big` of the NodePool `default` (c8i xlarge or 2xlarge, either
 * capacity type, consolidated at once) with one pod of 1 cpu: consolidation replaces it by a spot
 * c8i.xlarge, whose price the bundled catalog only assumes (no Spot Advisor estimate for c8i).
 */
export const assumedSpotReplacement = (duration: string) => `name: assumed
duration: ${duration}
bootDelay: 30s
nodes:
  - { name: big, nodePool: default, instanceType: c8i.2xlarge }
${defaultPoolYaml(
  [
    '{ key: karpenter.k8s.aws/instance-family, operator: In, values: [c8i] }',
    '{ key: karpenter.k8s.aws/instance-size, operator: In, values: [xlarge, 2xlarge] }',
  ],
  '      disruption: { consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s }\n',
)}${web(1, '', '"1"')}`;
