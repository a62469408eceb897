import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubeHttp, type RawApi } from '../../../shared/adapters/kube/http.ts';
import { makeKubeCluster } from '../../../shared/adapters/kube/index.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { Cluster } from '../../../shared/ports/cluster.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { nodePoolManifest } from '../../fixtures/builders.ts';
import { newNodeClaim } from '../../fixtures/node-claims.ts';
import { forceDeleteNodeClaims } from '../../harness/cleanup.ts';
import { type Kube, kube } from '../../harness/index.ts';
import { createNamespace } from '../../harness/kube/namespace.ts';
import { waitFor } from '../../harness/proc.ts';

// A warm container reads every NodeClaim by catching up from its last read (a probe of the API
// server's revision, then a watch of a few seconds), not by listing them all again: what it reads
// must be what a fresh list reads at that moment, after creations, changes and deletions by
// another container; and an identity that may not watch lists them all, as before, saying why once
// and asking no more.

const id = randomBytes(3).toString('hex');
const ns = `catch-up-${id}`;
const clock = makeManualClock(new Date('2026-12-06T10:00:00Z'));

let cube: Kube;
const made: string[] = [];
/** The NodePool that owns the test's NodeClaims: with an owner that exists, the garbage collector leaves them be. */
const poolName = `cu-pool-${id}`;
let poolUid = '';
const claim = (name: string) => newNodeClaim(name, { nodePool: { name: poolName, uid: poolUid } });

/** The requests a connection makes, as `verb path`, with `watch` for watches. */
function recorded(api: RawApi): { readonly api: RawApi; readonly calls: string[] } {
  const calls: string[] = [];
  const what = (request: { readonly path: string; readonly query?: object }) =>
    `${request.path}${request.query !== undefined && 'fieldSelector' in request.query ? ' (probe)' : ''}`;
  return {
    calls,
    api: {
      ...api,
      request: (request) => {
        calls.push(`${request.method} ${what(request)}`);
        return api.request(request);
      },
      list: (request, onItem) => {
        calls.push(`list ${what(request)}`);
        return api.list(request, onItem);
      },
      stream: (request, onLine) => {
        calls.push(`watch ${what(request)}`);
        return api.stream(request, onLine);
      },
    },
  };
}

/** An adapter catching up from its first NodeClaim, or from the adapter's default (`'default'`). */
function adapter(connection: RawApi, lines: string[] = [], catchUpFrom: number | 'default' = 0): Cluster {
  return makeKubeCluster({
    connection,
    logger: makeLogger({}, { level: 'debug', sink: (line) => lines.push(line) }),
    clock,
    maxConcurrentCalls: 4,
    callTimeoutMs: 15_000,
    // Catching up from the first NodeClaim, as a container of a large cluster does.
    ...(catchUpFrom === 'default' ? {} : { nodeClaimCatchUpFrom: catchUpFrom }),
  });
}

/** This file's NodeClaims, as names and resourceVersions, in the order the read gives them. */
async function names(cluster: Cluster): Promise<string[]> {
  const read = await cluster.nodeClaims({ consistent: true });
  return [
    ...read.items.map((c) => `${c.name}@${c.resourceVersion}`),
    ...read.unreadable.map((u) => u.name),
  ].filter((n) => n.includes(id));
}

const nodePools = { group: 'karpenter.sh', version: 'v1', plural: 'nodepools' };

beforeAll(async () => {
  cube = await kube();
  await createNamespace(cube.userKubeConfig.makeApiClient(CoreV1Api), ns);
  // The fixture's manifest without its uid: the API server gives the NodePool its own.
  const { uid: _uid, ...metadata } = nodePoolManifest(poolName).metadata;
  const pool = (await cube.userKubeConfig.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    ...nodePools,
    body: { ...nodePoolManifest(poolName), metadata },
  })) as { metadata: { uid: string } };
  poolUid = pool.metadata.uid;
});

afterAll(async () => {
  await forceDeleteNodeClaims(cube.controllerKubeConfig, made);
  await cube.userKubeConfig
    .makeApiClient(CustomObjectsApi)
    .deleteClusterCustomObject({ ...nodePools, name: poolName })
    .catch(() => undefined);
});

describe('NodeClaims a warm container catches up with', () => {
  it('reads what a fresh list reads after another container created, changed and deleted NodeClaims, with a watch and no second list', async () => {
    const other = adapter(cube.controllerConnection());
    const create = async (name: string) => {
      made.push(name);
      expect(await other.createNodeClaim(claim(name))).toBe(true);
    };
    await create(`cu-a-${id}`);
    await create(`cu-b-${id}`);
    const warm = recorded(cube.controllerConnection());
    const cluster = adapter(warm.api);
    const first = await names(cluster);
    expect(first.some((n) => n.startsWith(`cu-a-${id}@`))).toBe(true);
    expect(warm.calls).toEqual(['list /apis/karpenter.sh/v1/nodeclaims']);

    const caughtUpAlone: boolean[] = [];
    for (let round = 0; round < 3; round++) {
      await create(`cu-c${round}-${id}`);
      await other.patchNodeClaimMetadata(`cu-b-${id}`, {
        annotations: { 'flotilla.test/round': String(round) },
      });
      if (round === 1) await forceDeleteNodeClaims(cube.controllerKubeConfig, [`cu-a-${id}`]);
      warm.calls.length = 0;
      const caught = await names(cluster);
      const fresh = await names(adapter(cube.controllerConnection()));
      expect(caught).toEqual(fresh);
      expect(caught.some((n) => n.startsWith(`cu-c${round}-${id}@`))).toBe(true);
      expect(caught.some((n) => n.startsWith(`cu-a-${id}@`))).toBe(round < 1);
      // A probe and a watch; a list only should the watch not catch up (a bookmark late on a busy
      // machine), which at least one round of three must do without.
      expect(warm.calls.slice(0, 2)).toEqual([
        'list /apis/karpenter.sh/v1/nodeclaims (probe)',
        'watch /apis/karpenter.sh/v1/nodeclaims',
      ]);
      caughtUpAlone.push(!warm.calls.includes('list /apis/karpenter.sh/v1/nodeclaims'));
    }
    expect(caughtUpAlone).toContain(true);
  });

  it('lists them again, without a watch, when its last read held fewer than nodeClaimCatchUpFrom', async () => {
    const other = adapter(cube.controllerConnection());
    made.push(`cu-e-${id}`);
    expect(await other.createNodeClaim(claim(`cu-e-${id}`))).toBe(true);
    const small = recorded(cube.controllerConnection());
    // The adapter's default: 1,000 NodeClaims, many more than this API server holds.
    const cluster = adapter(small.api, [], 'default');
    await names(cluster);
    await other.patchNodeClaimMetadata(`cu-e-${id}`, { annotations: { 'flotilla.test/small': 'yes' } });
    small.calls.length = 0;
    expect(await names(cluster)).toEqual(await names(adapter(cube.controllerConnection())));
    expect(small.calls).toEqual(['list /apis/karpenter.sh/v1/nodeclaims']);
  });

  it('lists them all when its identity may not watch NodeClaims, says why once, and stops asking', async () => {
    const user = cube.userKubeConfig;
    const core = user.makeApiClient(CoreV1Api);
    const rbac = user.makeApiClient(RbacAuthorizationV1Api);
    const name = `catch-up-no-watch-${id}`;
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
    await rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: [{ apiGroups: ['karpenter.sh'], resources: ['nodeclaims'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
      },
    });
    try {
      const token = await core.createNamespacedServiceAccountToken({
        name,
        namespace: ns,
        body: { spec: { audiences: [], expirationSeconds: 600 } },
      });
      const bearer = token.status?.token ?? '';
      const lines: string[] = [];
      const connection = recorded(
        makeKubeHttp({
          server: new URL(cube.server),
          tls: { ca: readFileSync(cube.caFile) },
          headers: async () => ({ authorization: `Bearer ${bearer}` }),
        }),
      );
      const cluster = adapter(connection.api, lines);
      const other = adapter(cube.controllerConnection());
      made.push(`cu-d-${id}`);
      expect(await other.createNodeClaim(claim(`cu-d-${id}`))).toBe(true);
      // The binding reaches the API server's authorizer a moment after it is created.
      await waitFor('the ServiceAccount may list NodeClaims', () => names(cluster), { timeoutMs: 15_000 });
      for (let i = 0; i < 2; i++) {
        // A change since the last read: the probe finds a newer revision, so a catch-up must watch.
        await other.patchNodeClaimMetadata(`cu-d-${id}`, {
          annotations: { 'flotilla.test/read': String(i) },
        });
        connection.calls.length = 0;
        const read = await names(cluster);
        expect(read).toEqual(await names(adapter(cube.controllerConnection())));
        // Refused once, the container lists from then on, without asking again.
        expect(connection.calls).toEqual(
          i === 0
            ? [
                'list /apis/karpenter.sh/v1/nodeclaims (probe)',
                'watch /apis/karpenter.sh/v1/nodeclaims',
                'list /apis/karpenter.sh/v1/nodeclaims',
              ]
            : ['list /apis/karpenter.sh/v1/nodeclaims'],
        );
      }
      const warnings = lines.filter((l) => l.includes('nodeclaim watch forbidden'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('"level":"warn"');
    } finally {
      await rbac.deleteClusterRoleBinding({ name }).catch(() => undefined);
      await rbac.deleteClusterRole({ name }).catch(() => undefined);
    }
  });
});
