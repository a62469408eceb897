import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { LAUNCH_BACKOFF_ANNOTATION } from '../../../shared/usecases/runaway-guard/index.ts';
import { HarnessError } from '../errors.ts';

// Test set-up plays a user, a kubelet or kube-controller-manager, and may do what they do. What a
// Flotilla controller owns (NodePool, EC2NodeClass and NodeClaim status, NodeClaims themselves,
// their labels and finalizers, the finalizers Flotilla puts on Nodes and EC2NodeClasses) only
// Flotilla writes (so does the runaway guard's state annotation on NodePools): a test that needs
// such a write to pass is hiding a product bug. The user's
// kubeconfig refuses those writes before they leave the process.

/** Thrown when test set-up tries to write what a Flotilla controller owns. */
export class ControllerOwnedWriteError extends HarnessError {}

const KARPENTER =
  /^\/apis\/(karpenter\.sh|karpenter\.k8s\.aws)\/v1\/(nodepools|nodeclaims|ec2nodeclasses)(?:\/([^/?]+))?(?:\/([^/?]+))?/;
const NODE = /^\/api\/v1\/nodes\/[^/?]+(?:\/([^/?]+))?/;
const WRITES = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Why `method path` with `body` would write what a Flotilla controller owns, or undefined when the
 * write is a user's, a kubelet's or kube-controller-manager's to make. Deletes are always allowed
 * (`kubectl delete nodeclaim` is a user's action).
 */
export function controllerOwnedWrite(method: string, path: string, body: unknown): string | undefined {
  if (!WRITES.has(method.toUpperCase())) return undefined;
  const karpenter = KARPENTER.exec(path);
  if (karpenter !== null) {
    const [, , plural, name, subresource] = karpenter;
    if (subresource === 'status') return `the status of ${plural} is written by Flotilla's controllers`;
    if (plural === 'nodeclaims' && !(method.toUpperCase() === 'POST' && isStandaloneCreate(body))) {
      return 'NodeClaims, their labels and finalizers are written by Flotilla';
    }
    if (
      plural === 'nodepools' &&
      method.toUpperCase() === 'PATCH' &&
      mentions(body, LAUNCH_BACKOFF_ANNOTATION)
    ) {
      return `the ${LAUNCH_BACKOFF_ANNOTATION} annotation is the runaway guard's`;
    }
    if (name !== undefined && touchesFinalizers(body)) {
      return `the finalizers of ${plural} are Flotilla's (karpenter.k8s.aws/termination)`;
    }
    return undefined;
  }
  const node = NODE.exec(path);
  if (node !== null && node[1] === undefined && method.toUpperCase() !== 'POST' && touchesFinalizers(body)) {
    return "a Node's finalizers are Flotilla's (karpenter.sh/termination)";
  }
  return undefined;
}

/**
 * A user's create of a standalone NodeClaim (Karpenter's NodeClaims outside every NodePool): no
 * `karpenter.sh/nodepool` label, no finalizers, no status and no `flotilla.io/` annotation (a
 * launch record), which are Flotilla's to write.
 */
function isStandaloneCreate(body: unknown): boolean {
  const parsed = parseBody(body);
  if (parsed === NOT_JSON) return false;
  if (typeof parsed !== 'object' || parsed === null || 'status' in parsed) return false;
  const metadata = (
    parsed as { metadata?: { labels?: Record<string, unknown>; annotations?: Record<string, unknown> } }
  ).metadata;
  const flotillaAnnotation = Object.keys(metadata?.annotations ?? {}).some((k) =>
    k.startsWith('flotilla.io/'),
  );
  return (
    metadata?.labels?.['karpenter.sh/nodepool'] === undefined &&
    !flotillaAnnotation &&
    !touchesFinalizers(parsed)
  );
}

/** Whether a patch names `key` anywhere (a merge patch of annotations, or a JSON patch path). */
function mentions(body: unknown, key: string): boolean {
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
  return text.includes(key) || text.includes(key.replaceAll('/', '~1'));
}

const NOT_JSON = Symbol('not JSON');

/** A request body as an object: parsed when it is a string, NOT_JSON when that string is not JSON. */
function parseBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body);
  } catch {
    return NOT_JSON;
  }
}

function touchesFinalizers(body: unknown): boolean {
  const parsed = parseBody(body);
  if (parsed === NOT_JSON) return typeof body === 'string' && /finalizers/.test(body);
  if (Array.isArray(parsed)) {
    // A JSON patch: any operation on /metadata/finalizers.
    return parsed.some((op) => typeof op?.path === 'string' && op.path.startsWith('/metadata/finalizers'));
  }
  const metadata = (parsed as { metadata?: Record<string, unknown> } | null)?.metadata;
  return metadata !== undefined && metadata !== null && 'finalizers' in metadata;
}

/** A kubeconfig whose clients refuse (by throwing) writes of what Flotilla's controllers own. */
export class UserKubeConfig extends KubeConfig {
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const url = new URL(context.getUrl());
    const why = controllerOwnedWrite(context.getHttpMethod(), url.pathname, context.getBody());
    if (why !== undefined) {
      throw new ControllerOwnedWriteError(
        `test set-up tried ${context.getHttpMethod()} ${url.pathname}: ${why}. Apply what a user applies and let Flotilla's controllers do the rest`,
      );
    }
    await super.applySecurityAuthentication(context);
  }
}
