import { describe, expect, it } from 'vitest';
import { parseKubeletRegistration } from '../../harness/user-data.ts';

const nodeadm = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo custom
--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: demo
    apiServerEndpoint: https://example.test
  kubelet:
    config:
      maxPods: 58
      kubeReserved: { cpu: 80m, memory: 893Mi, ephemeral-storage: 1Gi }
      evictionHard: { memory.available: 100Mi, nodefs.available: 10% }
      registerWithTaints:
        - { key: karpenter.sh/unregistered, effect: NoExecute }
        - { key: team, value: gpu, effect: NoSchedule }
    flags:
      - --node-labels=karpenter.sh/nodepool=default,team=gpu
--//--
`;

const bottlerocket = `
[settings.kubernetes]
cluster-name = "demo"
max-pods = 29

[settings.kubernetes.node-labels]
"karpenter.sh/nodepool" = "default"

[settings.kubernetes.node-taints]
"karpenter.sh/unregistered" = ["NoExecute"]
"team" = ["gpu:NoSchedule"]

[settings.kubernetes.kube-reserved]
cpu = "70m"
memory = "574Mi"
`;

describe('parseKubeletRegistration', () => {
  it('reads labels, taints, maxPods and reservations from an AL2023 nodeadm NodeConfig in MIME multipart', () => {
    expect(parseKubeletRegistration(nodeadm)).toEqual({
      format: 'nodeadm',
      labels: { 'karpenter.sh/nodepool': 'default', team: 'gpu' },
      taints: [
        { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
        { key: 'team', value: 'gpu', effect: 'NoSchedule' },
      ],
      maxPods: 58,
      kubeReserved: { cpu: '80m', memory: '893Mi', 'ephemeral-storage': '1Gi' },
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
      clusterName: 'demo',
    });
  });

  it('reads Bottlerocket TOML settings', () => {
    expect(parseKubeletRegistration(bottlerocket)).toEqual({
      format: 'bottlerocket',
      labels: { 'karpenter.sh/nodepool': 'default' },
      taints: [
        { key: 'karpenter.sh/unregistered', effect: 'NoExecute' },
        { key: 'team', value: 'gpu', effect: 'NoSchedule' },
      ],
      maxPods: 29,
      kubeReserved: { cpu: '70m', memory: '574Mi' },
      clusterName: 'demo',
    });
  });

  it("reads the kubelet flags AL2's bootstrap.sh passes on", () => {
    const script =
      "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--node-labels=a=1,b=2 --register-with-taints=x=y:NoSchedule --max-pods=17'";
    expect(parseKubeletRegistration(script)).toEqual({
      format: 'bootstrap.sh',
      labels: { a: '1', b: '2' },
      taints: [{ key: 'x', value: 'y', effect: 'NoSchedule' }],
      maxPods: 17,
      clusterName: 'demo',
    });
  });

  it('reads the kubelet flags Start-EKSBootstrap.ps1 passes on in a PowerShell block', () => {
    const script = [
      '<powershell>',
      '& "C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1" -EKSClusterName \'demo\' `',
      '  -KubeletExtraArgs \'--node-labels="a=1" --register-with-taints="os=windows:NoSchedule" --kube-reserved="memory=1Gi"\'',
      '</powershell>',
    ].join('\n');
    expect(parseKubeletRegistration(script)).toEqual({
      format: 'windows',
      labels: { a: '1' },
      taints: [{ key: 'os', value: 'windows', effect: 'NoSchedule' }],
      kubeReserved: { memory: '1Gi' },
      clusterName: 'demo',
    });
  });

  it('reads kubelet flags from any other script', () => {
    const script = '#!/bin/bash\nexec /usr/bin/kubelet --node-labels=a=1 --max-pods=17';
    expect(parseKubeletRegistration(script)).toEqual({
      format: 'shell',
      labels: { a: '1' },
      taints: [],
      maxPods: 17,
    });
  });

  it('returns nothing to register for empty user data', () => {
    expect(parseKubeletRegistration('')).toEqual({ format: 'none', labels: {}, taints: [] });
  });

  it('refuses a taint without a valid effect, as kubelet would', () => {
    const bad = nodeadm.replace('effect: NoSchedule', 'effect: Sometimes');
    expect(() => parseKubeletRegistration(bad)).toThrow(/kubelet would refuse taint/);
  });
});
