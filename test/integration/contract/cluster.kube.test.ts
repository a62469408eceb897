import { afterAll, expect } from 'vitest';
import { CONTROLLER_RULES } from '../../../infra/manifests.ts';
import { describeClusterContract } from '../../contract/cluster-contract.ts';
import { RecordingKubeConfig } from '../../harness/kube/recording.ts';
import { kubeContractSubject } from './kube-subject.ts';

// The adapter runs as Flotilla's own identity (the flotilla:controller group, bound by the rendered
// RBAC); seeding plays a user, a kubelet or kube-controller-manager with the user's kubeconfig.
// The contract calls every port method, so what the adapter asked of the API server is what
// Flotilla's ClusterRole must grant: no more (afterAll below), and no less (a 403 fails the case).
const recorder = new RecordingKubeConfig();

afterAll(() => {
  const granted = new Set(
    CONTROLLER_RULES.flatMap((rule) =>
      rule.apiGroups.flatMap((group) =>
        rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${group}|${resource}|${verb}`)),
      ),
    ),
  );
  expect([...recorder.accesses].filter((a) => !granted.has(a)).sort(), 'used but not granted').toEqual([]);
  expect(
    [...granted].filter((a) => !recorder.accesses.has(a as never)).sort(),
    'granted but never used',
  ).toEqual([]);
});
describeClusterContract('kube adapter on a real API server', () => kubeContractSubject(recorder));
