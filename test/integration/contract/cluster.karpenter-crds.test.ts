import { describe } from 'vitest';
import { describeClusterContract } from '../../contract/cluster-contract.ts';
import { withKarpenterCrds } from '../../harness/karpenter-crds.ts';
import type { KarpenterLine } from '../../harness/kube/crds.ts';
import { RecordingKubeConfig } from '../../harness/kube/recording.ts';
import { kubeContractSubject } from './kube-subject.ts';

// The Cluster contract again, on an API server serving the CRDs of Karpenter's own Helm chart
// (v1.14 and v1.15 lines, from its Go module) instead of Flotilla's: everything the kube adapter
// writes to a NodePool, NodeClaim, EC2NodeClass or NodeOverlay, status included, must read back
// unchanged, so no field Karpenter's schema would prune is written or relied on.

const LINES: readonly KarpenterLine[] = ['v1.14', 'v1.15'];

for (const line of LINES) {
  describe(`with Karpenter ${line}'s Helm-chart CRDs`, () => {
    withKarpenterCrds(line);
    describeClusterContract(`kube adapter, Karpenter ${line} CRDs`, () =>
      kubeContractSubject(new RecordingKubeConfig()),
    );
  });
}
