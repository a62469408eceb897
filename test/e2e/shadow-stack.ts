import fs from 'node:fs';
import { EnvVar } from '../../shared/runtime/env.ts';
import { shadowRole } from '../harness/aws/identity.ts';
import { deployShadowStack, SHADOW_STACK_NAMES, STACK_CLUSTER } from '../harness/aws/stack.ts';
import type { Kube, Moto } from '../harness/index.ts';
import { SCHEDULED_EVENT } from '../harness/lambda-triggers.ts';
import { asLambda } from '../integration/aws/lambda-cold-start.ts';

// A shadow stack (`-c mode=shadow`) deployed beside the cluster's autoscaler: its own state table
// on moto, and its catalog, provisioner and disruption Lambdas' handlers imported as their cold
// starts do, with the shadow stack's roles (the IAM check holds each call to the shadow policy),
// the shadow group's kubeconfig (bound by the shadow manifests' read-only RBAC) and the variables
// the shadow stack sets (FLOTILLA_MODE=shadow, no queue, no summary bucket). Their lines go to
// `lines` as CloudWatch Logs would get them.

type Handler = (event: unknown, context: { awsRequestId: string }) => Promise<unknown>;

export interface ShadowStack {
  /** One scheduled invocation of a shadow Lambda. */
  readonly invoke: (name: 'catalog' | 'provisioner' | 'disruption') => Promise<unknown>;
  /** Every JSON line the shadow Lambdas wrote, in order. */
  readonly lines: Record<string, unknown>[];
  /** Puts the process environment back as it was before the shadow stack's. */
  readonly restore: () => void;
}

/** The variables a shadow stack gives its Lambdas, on the harness's moto and API server. */
function shadowEnv(server: Moto, cube: Kube): Record<string, string | undefined> {
  return {
    AWS_REGION: server.region,
    AWS_ENDPOINT_URL: server.endpoint,
    KUBECONFIG: cube.shadowKubeconfigPath,
    [EnvVar.mode]: 'shadow',
    [EnvVar.clusterName]: STACK_CLUSTER,
    [EnvVar.stateTable]: SHADOW_STACK_NAMES.stateTable,
    [EnvVar.decisionBus]: SHADOW_STACK_NAMES.decisionBus,
    // What the stack would find with eks:DescribeCluster.
    FLOTILLA_CLUSTER_ENDPOINT: cube.server,
    FLOTILLA_CLUSTER_CA: fs.readFileSync(cube.caFile).toString('base64'),
    FLOTILLA_KUBERNETES_VERSION: cube.kubernetesVersion.replace(/^v?(\d+\.\d+).*$/, '$1'),
    // Not set by a shadow stack.
    [EnvVar.summaryBucket]: undefined,
    [EnvVar.podEventQueueUrl]: undefined,
    [EnvVar.terminationQueueUrl]: undefined,
    [EnvVar.disruptionQueueUrl]: undefined,
  };
}

/** Deploys the shadow stack and cold-starts its three Lambdas. */
export async function startShadowStack(server: Moto, cube: Kube): Promise<ShadowStack> {
  await deployShadowStack(server);
  const saved = { ...process.env };
  const restore = () => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  };
  for (const [key, value] of Object.entries(shadowEnv(server, cube))) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
  const lines: Record<string, unknown>[] = [];
  const capturing = async <T>(work: () => Promise<T>): Promise<T> => {
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const text = String(chunk);
      const ours = text.split('\n').filter((l) => l.startsWith('{') && l.includes('"lambda"'));
      for (const line of ours) lines.push(JSON.parse(line) as Record<string, unknown>);
      return ours.length > 0 ? true : write(chunk, ...(rest as []));
    }) as typeof process.stdout.write;
    try {
      return await work();
    } finally {
      process.stdout.write = write;
    }
  };
  const load = async (name: 'catalog' | 'provisioner' | 'disruption', module: () => Promise<unknown>) =>
    ((await capturing(() => asLambda(server, shadowRole(name), module))) as { handler: Handler }).handler;
  try {
    const handlers = {
      catalog: await load('catalog', () => import('../../lambdas/catalog/handler.ts')),
      provisioner: await load('provisioner', () => import('../../lambdas/provisioner/handler.ts')),
      disruption: await load('disruption', () => import('../../lambdas/disruption/handler.ts')),
    };
    return {
      lines,
      restore,
      invoke: (name) =>
        capturing(() =>
          asLambda(server, shadowRole(name), () =>
            handlers[name](SCHEDULED_EVENT, {
              awsRequestId: `shadow-${name}-${Math.random().toString(16).slice(2, 10)}`,
            }),
          ),
        ),
    };
  } catch (error) {
    restore();
    throw error;
  }
}

/** The verbs of the requests the shadow user made, as the API server audited them, from `offset` bytes on. */
export function auditedVerbs(cube: Kube, offset: number): { verb: string; uri: string; code: number }[] {
  const text = fs.existsSync(cube.shadowAuditLogPath) ? fs.readFileSync(cube.shadowAuditLogPath, 'utf8') : '';
  return text
    .slice(offset)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { verb: string; requestURI: string; responseStatus?: { code?: number } })
    .map((e) => ({ verb: e.verb, uri: e.requestURI, code: e.responseStatus?.code ?? 0 }));
}

/** Where the audit log ends now (its size in bytes). */
export function auditOffset(cube: Kube): number {
  return fs.existsSync(cube.shadowAuditLogPath) ? fs.statSync(cube.shadowAuditLogPath).size : 0;
}
