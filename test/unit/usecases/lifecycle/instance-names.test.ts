import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { nameInstances } from '../../../../shared/usecases/lifecycle/instance-names.ts';
import { threeNodes } from '../disruption/pass-world.ts';

// Instances are named after their registered node, once, by the controllers pass; what the list
// says (it may be the cluster summary, which the shim's role writes) is checked on the API server.

describe('nameInstances', () => {
  it("names each registered node's instance once, and acts on no NodeClaim the API server does not have", async () => {
    const world = await threeNodes();
    const claims = (await world.cluster.nodeClaims()).items;
    const instances = await world.cloud.list();
    expect(claims).toHaveLength(3);
    for (const claim of claims) {
      expect(claim.annotations['karpenter.k8s.aws/tagged']).toBe('true');
      const instance = instances.find((i) => i.providerId === claim.status.providerId);
      expect(instance?.tags['Name']).toBe(claim.status.nodeName);
    }
    const ports = { cluster: world.cluster, cloud: world.cloud, logger: makeLogger({}, { sink: () => {} }) };
    // Named already: nothing more to do.
    expect(await nameInstances(ports, claims)).toEqual([]);
    // A NodeClaim only the list has, claiming a live instance for another node name.
    const [first] = claims;
    if (first === undefined) throw new Error('no NodeClaim');
    const forged = {
      ...first,
      name: 'forged',
      annotations: {},
      status: { ...first.status, nodeName: 'evil' },
    };
    expect(await nameInstances(ports, [forged])).toEqual([]);
    const after = (await world.cloud.list()).find((i) => i.providerId === first.status.providerId);
    expect(after?.tags['Name']).toBe(first.status.nodeName);
  });
});
