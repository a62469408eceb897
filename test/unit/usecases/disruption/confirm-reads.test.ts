import { describe, expect, it } from 'vitest';
import { Confirmation } from '../../../../shared/usecases/disruption/confirm.ts';
import { watched } from '../../../fixtures/watched.ts';
import { threeNodes } from './pass-world.ts';

// A confirmation reads what it needs and no more: a destination Node with its pods (no drain
// view), a candidate's Node with the drain view too unless the API server has no such Node, and
// at most eight objects at once.

async function confirmation() {
  const w = await threeNodes();
  const calls: string[] = [];
  let inFlight = 0;
  let most = 0;
  const cluster = watched(w.cluster, (method, args) => {
    calls.push(`${method} ${String(args[0])}`);
    if (method !== 'nodeClaim') return undefined;
    inFlight += 1;
    most = Math.max(most, inFlight);
    return new Promise((resolve) => setTimeout(resolve, 1)).then(async () => {
      inFlight -= 1;
      return w.cluster.nodeClaim(String(args[0]));
    });
  });
  const nodes = (await w.cluster.nodeInfos()).items.map((n) => n.name);
  const c = new Confirmation(
    cluster,
    { state: { nodes: [] } as never, claims: [], input: undefined },
    (claim) => ({ view: claim }),
    { nowMs: w.clock.now().getTime() },
  );
  return { c, calls, nodes, most: () => most };
}

describe('the reads of a confirmation', () => {
  it('reads a destination Node with its pods only, and a candidate Node the API server has with its drain view', async () => {
    const { c, calls, nodes } = await confirmation();
    const [destination = '', candidate = ''] = nodes;
    await c.readNodes([destination]);
    expect(calls).toEqual([`nodeWithPods ${destination}`]);
    await c.readCandidateNodes([candidate, 'missing']);
    expect(calls.slice(1).sort()).toEqual(
      [`nodeWithPods ${candidate}`, 'nodeWithPods missing', `podsOnNode ${candidate}`].sort(),
    );
    expect(c.node('missing')).toBeUndefined();
    expect(c.node(candidate)?.pods?.items.length).toBe(1);
    expect(c.requests).toBe(2 + 2 + 2 + 1);
  });

  it('reads at most eight objects at once, each once', async () => {
    const { c, calls, most } = await confirmation();
    const names = Array.from({ length: 20 }, (_, i) => `claim-${i}`);
    await c.readClaims([...names, ...names]);
    expect(calls).toHaveLength(20);
    expect(most()).toBe(8);
  });
});
