import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

// Which RBAC verbs on which resources a client used: the requests of a kubeconfig, each turned into
// (API group, resource[/subresource], verb) as the API server's authorizer sees it.

/** One authorization the API server made: `group|resource|verb`, the core group being ''. */
export type Access = `${string}|${string}|${string}`;

/** The RBAC attributes of a request (`GET /api/v1/nodes` → `|nodes|list`). */
export function accessOf(method: string, url: string): Access | undefined {
  const { pathname, searchParams } = new URL(url);
  const core = /^\/api\/v1\/(.*)$/.exec(pathname);
  const grouped = /^\/apis\/([^/]+)\/[^/]+\/(.*)$/.exec(pathname);
  const group = core !== null ? '' : (grouped?.[1] ?? undefined);
  const rest = core?.[1] ?? grouped?.[2];
  if (group === undefined || rest === undefined) return undefined;
  let parts = rest.split('/').filter((p) => p !== '');
  // A namespaced path; `namespaces` alone (or one namespace) is the namespaces resource itself.
  if (parts[0] === 'namespaces' && parts.length > 2) parts = parts.slice(2);
  const [resource, name, subresource] = parts;
  if (resource === undefined) return undefined;
  const verb = ((): string => {
    switch (method.toUpperCase()) {
      case 'GET':
        if (searchParams.get('watch') === 'true') return 'watch';
        return name === undefined ? 'list' : 'get';
      case 'POST':
        return 'create';
      case 'PUT':
        return 'update';
      case 'PATCH':
        return 'patch';
      case 'DELETE':
        return name === undefined ? 'deletecollection' : 'delete';
      default:
        return method.toLowerCase();
    }
  })();
  return `${group}|${subresource === undefined ? resource : `${resource}/${subresource}`}|${verb}`;
}

/** A kubeconfig that records the RBAC attributes of every request its clients make. */
export class RecordingKubeConfig extends KubeConfig {
  readonly accesses = new Set<Access>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const access = accessOf(context.getHttpMethod(), context.getUrl());
    if (access !== undefined) this.accesses.add(access);
    await super.applySecurityAuthentication(context);
  }
}
