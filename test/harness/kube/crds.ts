import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { HarnessError } from '../errors.ts';
import { projectRoot } from '../paths.ts';
import { progress, waitFor } from '../proc.ts';

// The CRDs a cluster of the harness serves: Flotilla's own (infra/crds), or those of Karpenter's
// Helm chart (charts/karpenter-crd) for a release line, taken from Karpenter's Go module as a
// Karpenter user's `helm install karpenter-crd` would install them.

/** A CRD as parsed from YAML, with the file it came from. */
export interface CrdDocument {
  readonly file: string;
  readonly name: string;
  readonly object: Record<string, unknown>;
}

/** Karpenter's release lines whose CRDs the harness can install: the newest patch of each. */
export const KARPENTER_RELEASES = {
  'v1.14': { version: 'v1.14.1', toolchain: 'local' },
  // The v1.15 modules need a Go newer than the machine's; the go command fetches this one.
  'v1.15': { version: 'v1.15.2', toolchain: 'go1.27.3' },
} as const;
export type KarpenterLine = keyof typeof KARPENTER_RELEASES;

const KARPENTER_MODULE = 'github.com/aws/karpenter-provider-aws';

/** Flotilla's CRDs, as the stack ships them. */
export function flotillaCrds(): CrdDocument[] {
  return crdsIn(path.join(projectRoot, 'infra', 'crds'));
}

/**
 * The CRDs of Karpenter's Helm chart for `line`, from its Go module (downloaded into the Go module
 * cache on first use). The chart's only template lines (its extra-annotations hook) are dropped.
 */
export async function karpenterCrds(line: KarpenterLine): Promise<CrdDocument[]> {
  const { version, toolchain } = KARPENTER_RELEASES[line];
  const began = Date.now();
  progress(`downloading the Go module ${KARPENTER_MODULE}@${version} for Karpenter's Helm-chart CRDs…`);
  // Outside any module, so the harness's own go.mod is not consulted or changed.
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'karpenter-module-'));
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(
      'go',
      ['mod', 'download', '-json', `${KARPENTER_MODULE}@${version}`],
      { cwd, env: { ...process.env, GOTOOLCHAIN: toolchain, GOFLAGS: '-mod=mod' }, maxBuffer: 1 << 20 },
    ));
  } catch (error) {
    const out = (error as { stdout?: string; stderr?: string }).stdout ?? '';
    throw new HarnessError(
      `go mod download ${KARPENTER_MODULE}@${version} failed: ${out}${(error as { stderr?: string }).stderr ?? ''}`,
      { cause: error },
    );
  } finally {
    fs.rmSync(cwd, { recursive: true, force: true });
  }
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (dir === undefined) throw new HarnessError(`go mod download gave no directory: ${stdout}`);
  progress(`${KARPENTER_MODULE}@${version} is at ${dir} (${((Date.now() - began) / 1000).toFixed(1)}s)`);
  return crdsIn(path.join(dir, 'charts', 'karpenter-crd', 'templates'));
}

/** Every CustomResourceDefinition in the YAML files of `dir`, Helm template lines left out. */
export function crdsIn(dir: string): CrdDocument[] {
  if (!fs.existsSync(dir)) throw new HarnessError(`no CRD folder at ${dir}`);
  const crds: CrdDocument[] = [];
  for (const file of fs
    .readdirSync(dir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()) {
    const text = fs
      .readFileSync(path.join(dir, file), 'utf8')
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('{{'))
      .join('\n');
    for (const document of parseAllDocuments(text)) {
      if (document.errors.length > 0) throw new HarnessError(`${file}: ${document.errors[0]?.message}`);
      const object = document.toJS() as Record<string, unknown> | null;
      const name = (object?.['metadata'] as { name?: string } | undefined)?.name;
      if (object?.['kind'] !== 'CustomResourceDefinition' || name === undefined) continue;
      crds.push({ file, name, object });
    }
  }
  return crds;
}

/**
 * Creates each CRD, or replaces the one of the same name, and waits until each is Established.
 * With `exclusive`, CRDs of the same API groups that are not in `crds` are deleted (a chart's extra
 * CRDs go when Flotilla's are put back).
 */
export async function installCrds(
  kubeConfig: KubeConfig,
  crds: readonly CrdDocument[],
  options: { readonly exclusive?: readonly string[] } = {},
): Promise<void> {
  const objects = kubeConfig.makeApiClient(KubernetesObjectApi);
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const existing = new Map(
    (await extensions.listCustomResourceDefinition()).items.map((c) => [c.metadata?.name ?? '', c] as const),
  );
  for (const crd of crds) {
    // Through the client's typed model: raw parsed YAML would lose every key the model spells
    // differently (x-kubernetes-validations, enum, default, $ref) when it is serialised.
    const typed = loadYaml<KubernetesObject>(JSON.stringify(crd.object));
    let current = existing.get(crd.name);
    // One still being deleted (a swap's deletion not yet done) is waited out, then created anew.
    if (current?.metadata?.deletionTimestamp !== undefined) {
      await crdGone(extensions, crd.name);
      current = undefined;
    }
    try {
      if (current === undefined) await objects.create(typed);
      else {
        typed.metadata = { ...typed.metadata, resourceVersion: current.metadata?.resourceVersion ?? '' };
        await objects.replace(typed);
      }
    } catch (error) {
      throw new HarnessError(`applying ${crd.file} failed: ${describeApiError(error)}`, { cause: error });
    }
  }
  const wanted = new Set(crds.map((c) => c.name));
  for (const [name, crd] of existing) {
    if (wanted.has(name) || !(options.exclusive ?? []).includes(crd.spec.group)) continue;
    await extensions.deleteCustomResourceDefinition({ name });
    // Gone before the swap ends: the API server deletes a CRD's objects first, and a later swap
    // that found it still there would update a CRD on its way out.
    await crdGone(extensions, name);
  }
  for (const crd of crds) {
    await waitFor(
      `CRD ${crd.name} to be Established`,
      async () => {
        const read: V1CustomResourceDefinition = await extensions.readCustomResourceDefinition({
          name: crd.name,
        });
        return read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
          ? true
          : undefined;
      },
      { timeoutMs: 30_000 },
    );
  }
}

async function crdGone(extensions: ApiextensionsV1Api, name: string): Promise<void> {
  await waitFor(
    `CRD ${name} to be deleted`,
    () =>
      extensions.readCustomResourceDefinition({ name }).then(
        () => undefined,
        (error: unknown) => {
          if ((error as { code?: unknown }).code === 404) return true;
          throw error;
        },
      ),
    { timeoutMs: 60_000 },
  );
}

/** The API server's own message from a client-node error, or the error's message. */
export function describeApiError(error: unknown): string {
  if (error && typeof error === 'object' && 'body' in error) {
    const body = (error as { body?: unknown }).body;
    if (typeof body === 'string') {
      try {
        return (JSON.parse(body) as { message?: string }).message ?? body;
      } catch {
        return body;
      }
    }
  }
  return error instanceof Error ? error.message : String(error);
}
