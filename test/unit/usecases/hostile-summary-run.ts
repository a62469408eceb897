import type { Cluster } from '../../../shared/ports/cluster.ts';
import { setUpDisruption } from '../../../shared/usecases/disruption/setup.ts';
import { setUpGarbageCollector } from '../../../shared/usecases/garbage-collection/setup.ts';
import { setUpProvisioner } from '../../../shared/usecases/provisioning/setup.ts';
import { setUpTermination } from '../../../shared/usecases/termination/setup.ts';
import type { World } from './hostile-summary-world.ts';

// The controllers' passes over a hostile-summary world, each use case set up by its Lambda's own
// set-up function with the Cluster port `clusterFor` gives it (a fresh one per Lambda, as each
// Lambda's container has its own), and what they did, read back from the in-memory API server and
// cloud: what they deleted, terminated, tainted, evicted, wrote and launched.

/** What the passes did to the world, as sorted lists of names. */
export interface Effects {
  /** NodeClaims deleted (gone or deleting). */
  readonly deletedNodeClaims: readonly string[];
  /** Nodes deleted (gone or deleting). */
  readonly deletedNodes: readonly string[];
  /** Instances terminated, by id. */
  readonly terminated: readonly string[];
  /** Taints added, as `node:key`. */
  readonly taints: readonly string[];
  /** Pods evicted or deleted, as `namespace/name`. */
  readonly evicted: readonly string[];
  /** NodeClaim conditions that lead to disruption, as `nodeClaim:type=status`. */
  readonly conditions: readonly string[];
  /** NodeClaims a disruption command started or carried out is disrupting. */
  readonly disrupted: readonly string[];
  /** Disruption commands started or carried out, as `action:candidate,…`. */
  readonly commands: readonly string[];
  /** Replacement NodeClaims those commands made. */
  readonly replacements: number;
  /** Pending pods the provisioner launched (or found existing capacity) for. */
  readonly launchedFor: readonly string[];
  /** Pending pods left unschedulable. */
  readonly unschedulable: readonly string[];
  /** NodeClaims created. */
  readonly createdNodeClaims: number;
  /** Instances launched. */
  readonly launched: number;
}

const DISRUPTING = new Set(['Drifted', 'Expired', 'Disrupting', 'DisruptionReason']);

type Raw = { metadata: { name: string; namespace?: string; deletionTimestamp?: unknown } } & Record<
  string,
  unknown
>;

function objects(world: World, kind: 'Pod' | 'Node' | 'NodeClaim'): Raw[] {
  return world.cluster.list(kind) as unknown as Raw[];
}

const keyOf = (o: Raw) =>
  o.metadata.namespace === undefined ? o.metadata.name : `${o.metadata.namespace}/${o.metadata.name}`;

interface Before {
  readonly claims: ReadonlySet<string>;
  readonly nodes: ReadonlySet<string>;
  readonly pods: ReadonlySet<string>;
  readonly instances: ReadonlySet<string>;
  readonly taints: ReadonlySet<string>;
  readonly conditions: ReadonlySet<string>;
  readonly history: number;
}

function taintsOf(world: World): string[] {
  return objects(world, 'Node').flatMap((n) =>
    (((n['spec'] as Record<string, unknown> | undefined)?.['taints'] ?? []) as { key: string }[]).map(
      (t) => `${n.metadata.name}:${t.key}`,
    ),
  );
}

function conditionsOf(world: World): string[] {
  return objects(world, 'NodeClaim').flatMap((c) =>
    (
      ((c['status'] as Record<string, unknown> | undefined)?.['conditions'] ?? []) as {
        type: string;
        status: string;
      }[]
    )
      .filter((x) => DISRUPTING.has(x.type) && x.status === 'True')
      .map((x) => `${c.metadata.name}:${x.type}=${x.status}`),
  );
}

async function liveInstances(world: World): Promise<string[]> {
  return (await world.cloud.list()).map((i) => i.instanceId);
}

async function before(world: World): Promise<Before> {
  return {
    claims: new Set(objects(world, 'NodeClaim').map(keyOf)),
    nodes: new Set(objects(world, 'Node').map(keyOf)),
    pods: new Set(
      objects(world, 'Pod')
        .filter((p) => p.metadata.deletionTimestamp === undefined)
        .map(keyOf),
    ),
    instances: new Set(await liveInstances(world)),
    taints: new Set(taintsOf(world)),
    conditions: new Set(conditionsOf(world)),
    history: world.cloud.history().length,
  };
}

/** Names in `was` that are now gone or deleting among `now`. */
function gone(was: ReadonlySet<string>, now: Raw[]): string[] {
  const alive = new Set(now.filter((o) => o.metadata.deletionTimestamp === undefined).map(keyOf));
  return [...was].filter((k) => !alive.has(k)).sort();
}

/**
 * Runs, in an order their schedules may take, a garbage-collection pass (with node repair), a
 * provisioner invocation (the provisioning run and the controllers pass), a disruption pass (its
 * validation wait on the manual clock) and the termination sweep with one pass over each
 * terminating NodeClaim. Returns what they did.
 */
export async function runPasses(world: World, clusterFor: () => Cluster): Promise<Effects> {
  const { clock, cloud, logger, metrics, leases, terminationQueue, resolver } = world;
  const was = await before(world);
  const sleep = async (ms: number) => clock.advance(ms);
  const requestTermination = (nodeClaim: string) => terminationQueue.enqueue({ nodeClaim }, 0);

  const gc = setUpGarbageCollector(
    { cluster: clusterFor(), cloud, logger, metrics, clock, requestTermination },
    { nodeRepair: true },
  );
  await gc.pass();
  await gc.repair?.();

  const provisioner = setUpProvisioner({
    cluster: clusterFor(),
    cloud,
    leases,
    clock,
    sleep,
    logger,
    metrics,
    nodeClassResolver: resolver,
    requestTermination,
  });
  const provisioned = await provisioner.provision('provisioner-1', 'schedule');
  await provisioner.reconcileLifecycle?.('provisioner-1');

  const launchRequests: string[] = [];
  const disruption = await setUpDisruption({
    cluster: clusterFor(),
    cloud,
    leases,
    clock,
    sleep,
    logger,
    metrics,
    terminationQueue,
    requestLaunch: async (names) => {
      launchRequests.push(...names);
    },
  }).pass('disruption-1');

  const termination = setUpTermination({
    cluster: clusterFor(),
    cloud,
    logger,
    metrics,
    terminationQueue,
    clock,
    sleep,
  });
  for (const name of await termination.terminatingNodeClaims()) await termination.terminate(name);

  const commands = disruption.decisions.filter((d) => d.outcome === 'started' || d.outcome === 'deleted');
  const claimsNow = objects(world, 'NodeClaim');
  const live = new Set(await liveInstances(world));
  const launchedFor =
    provisioned.kind === 'provisioned'
      ? provisioned.claims.flatMap((c) => (c.kind === 'launched' ? c.pods.map((p) => p.name) : []))
      : [];
  return {
    deletedNodeClaims: gone(was.claims, claimsNow),
    deletedNodes: gone(was.nodes, objects(world, 'Node')),
    terminated: [...was.instances].filter((id) => !live.has(id)).sort(),
    taints: taintsOf(world)
      .filter((t) => !was.taints.has(t))
      .sort(),
    evicted: gone(was.pods, objects(world, 'Pod')),
    conditions: conditionsOf(world)
      .filter((c) => !was.conditions.has(c))
      .sort(),
    disrupted: [...new Set(commands.flatMap((d) => d.candidates.map((c) => c.nodeClaim)))].sort(),
    replacements: commands.reduce((n, d) => n + d.replacements.length, 0),
    commands: commands.map((d) => `${d.action}:${d.candidates.map((c) => c.nodeClaim).join(',')}`).sort(),
    launchedFor: [...new Set(launchedFor)].sort(),
    unschedulable:
      provisioned.kind === 'provisioned' ? provisioned.unschedulable.map((u) => u.pod.name).sort() : [],
    createdNodeClaims: claimsNow.filter((c) => !was.claims.has(keyOf(c))).length,
    launched: world.cloud.history().length - was.history,
  };
}
