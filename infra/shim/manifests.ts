import { createHash } from 'node:crypto';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';
import { EnvVar } from '../../shared/runtime/env.ts';

/** A ConfigMap holds at most 1 MiB; the bundled shim must fit with room to spare. */
export const CONFIGMAP_LIMIT_BYTES = 1024 * 1024;

/** The public Node.js image the shim runs on (the Docker official image, mirrored on ECR Public). */
export const SHIM_IMAGE = 'public.ecr.aws/docker/library/node:22-alpine';

/** Where the ConfigMap is mounted in the shim's container. */
const programDir = '/opt/flotilla';

/**
 * Bundles infra/shim/main.ts with its dependencies into one ES module (esbuild, Node 22), the
 * program the shim's ConfigMap carries.
 */
export function bundleShim(): Buffer {
  const result = buildSync({
    entryPoints: [path.join(import.meta.dirname, 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    minify: true,
    write: false,
    legalComments: 'none',
    // Some dependencies still call require(); give the ES module one.
    banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
    logLevel: 'silent',
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('esbuild produced no output for the shim');
  return Buffer.from(output.contents);
}

/**
 * The boot script in the ConfigMap: a ConfigMap cannot hold the 3 MB program, so it holds it
 * gzipped; this unpacks it into a writable temporary folder and runs it.
 */
export const BOOT_SCRIPT = `import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
const dir = mkdtempSync(join(tmpdir(), 'flotilla-shim-'));
writeFileSync(join(dir, 'shim.mjs'), gunzipSync(readFileSync(join(import.meta.dirname, 'shim.mjs.gz'))));
await import(join(dir, 'shim.mjs'));
`;

/** The shim's memory: what it requests of its node and its limit, in MiB. */
export interface ShimMemory {
  readonly requestMiB: number;
  readonly limitMiB: number;
}

/** @default for a cluster of up to 500 nodes and 10,000 pods (see infra/cluster-props.ts). */
export const DEFAULT_SHIM_MEMORY: ShimMemory = { requestMiB: 128, limitMiB: 384 };

/** The V8 heap the shim may grow to: three quarters of its limit, the rest for buffers and code. */
export function shimHeapMiB(memory: ShimMemory): number {
  return Math.floor(memory.limitMiB * 0.75);
}

export interface ShimManifestOptions {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly clusterName: string;
  /** URL of the pod-event queue. */
  readonly queueUrl: string;
  /** Bucket the shim publishes the cluster summary to (`EnvVar.summaryBucket`). @default none */
  readonly summaryBucket?: string;
  readonly region: string;
  /** @default SHIM_IMAGE */
  readonly image?: string;
  /** @default DEFAULT_SHIM_MEMORY */
  readonly memory?: ShimMemory;
  /** The bundled program; @default bundleShim() */
  readonly program?: Buffer;
}

/**
 * The shim's ConfigMap (boot script and gzipped program) and Deployment: one replica of a
 * public Node.js image running the program from the ConfigMap as a non-root user with a
 * read-only root filesystem; AWS credentials come from EKS Pod Identity through its
 * ServiceAccount. The Deployment rolls when the program changes (its hash is an annotation).
 */
export function renderShimObjects(options: ShimManifestOptions): unknown[] {
  const memory = options.memory ?? DEFAULT_SHIM_MEMORY;
  const program = gzipSync(options.program ?? bundleShim(), { level: 9 });
  const encoded = program.toString('base64');
  if (encoded.length + BOOT_SCRIPT.length > CONFIGMAP_LIMIT_BYTES * 0.95) {
    throw new Error(
      `the bundled shim is ${encoded.length} bytes in base64, too close to the ${CONFIGMAP_LIMIT_BYTES}-byte ConfigMap limit; trim its dependencies`,
    );
  }
  const hash = createHash('sha256').update(program).update(BOOT_SCRIPT).digest('hex').slice(0, 16);
  const labels = { 'app.kubernetes.io/name': 'flotilla-shim', 'app.kubernetes.io/part-of': 'flotilla' };
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'flotilla-shim-program', namespace: options.namespace, labels },
      data: { 'boot.mjs': BOOT_SCRIPT },
      binaryData: { 'shim.mjs.gz': encoded },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'flotilla-shim', namespace: options.namespace, labels },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { 'app.kubernetes.io/name': 'flotilla-shim' } },
        template: {
          metadata: { labels, annotations: { 'flotilla/program-sha256': hash } },
          spec: {
            serviceAccountName: options.serviceAccount,
            priorityClassName: 'system-cluster-critical',
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1000,
              runAsGroup: 1000,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'shim',
                image: options.image ?? SHIM_IMAGE,
                command: ['node', `${programDir}/boot.mjs`],
                env: [
                  { name: EnvVar.clusterName, value: options.clusterName },
                  { name: EnvVar.podEventQueueUrl, value: options.queueUrl },
                  ...(options.summaryBucket === undefined
                    ? []
                    : [{ name: EnvVar.summaryBucket, value: options.summaryBucket }]),
                  { name: 'AWS_REGION', value: options.region },
                  { name: 'NODE_OPTIONS', value: `--max-old-space-size=${shimHeapMiB(memory)}` },
                ],
                resources: {
                  requests: { cpu: '50m', memory: `${memory.requestMiB}Mi` },
                  limits: { memory: `${memory.limitMiB}Mi` },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'program', mountPath: programDir, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'program', configMap: { name: 'flotilla-shim-program' } },
              { name: 'tmp', emptyDir: { sizeLimit: '32Mi' } },
            ],
          },
        },
      },
    },
  ];
}
