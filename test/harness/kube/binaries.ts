import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setInterval } from 'node:timers';
import { HarnessError } from '../errors.ts';
import { cacheDir } from '../paths.ts';
import { progress, runLogged, secondsSince } from '../proc.ts';

/** Paths of the control-plane binaries built for the harness. */
export interface KubeBinaries {
  readonly kubernetesVersion: string;
  readonly etcdVersion: string;
  /** The folder they are kept in. */
  readonly dir: string;
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
}

const buildModule = path.join(import.meta.dirname, 'build');

/**
 * Where built binaries are kept: `$FLOTILLA_KUBE_CACHE` when set (an empty folder there makes the
 * next run build again, reusing Go's own caches), else .cache/kube.
 */
const binariesRoot = process.env['FLOTILLA_KUBE_CACHE'] || path.join(cacheDir, 'kube');

/** The Kubernetes and etcd versions pinned in the build module's go.mod. */
export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const goMod = fs.readFileSync(path.join(buildModule, 'go.mod'), 'utf8');
  const version = (module: string) => {
    const match = new RegExp(`^\\s*(?:require\\s+)?${module.replaceAll('.', '\\.')}\\s+(v\\S+)`, 'm').exec(
      goMod,
    );
    if (!match?.[1]) throw new HarnessError(`${module} is not required in ${buildModule}/go.mod`);
    return match[1];
  };
  return { kubernetes: version('k8s.io/kubernetes'), etcd: version('go.etcd.io/etcd/server/v3') };
}

/** Where the binaries of the pinned versions are, built or not: <root>/<version>-<hash of go.mod+go.sum>. */
function locate(): KubeBinaries {
  const versions = pinnedVersions();
  const key = createHash('sha256')
    .update(fs.readFileSync(path.join(buildModule, 'go.mod')))
    .update(fs.readFileSync(path.join(buildModule, 'go.sum')))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(binariesRoot, `${versions.kubernetes}-${key}`);
  return {
    kubernetesVersion: versions.kubernetes,
    etcdVersion: versions.etcd,
    dir,
    etcd: path.join(dir, 'etcd'),
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
    kubeScheduler: path.join(dir, 'kube-scheduler'),
  };
}

function built(bins: KubeBinaries): boolean {
  return [bins.etcd, bins.kubeApiserver, bins.kubeControllerManager, bins.kubeScheduler].every((file) =>
    fs.existsSync(file),
  );
}

/**
 * The built control-plane binaries, for starting a control plane. They are built by the global
 * setup (test/harness/global-setup.ts) before any test file runs, never by a test.
 * @throws HarnessError when they are not built.
 */
export function kubeBinaries(): KubeBinaries {
  const bins = locate();
  if (!built(bins)) {
    throw new HarnessError(
      `the control-plane binaries are not built in ${bins.dir}: the harness's global setup ` +
        '(test/harness/global-setup.ts) builds them before any test file runs; run the tests with vitest',
    );
  }
  return bins;
}

/**
 * Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler with `go build` from
 * the pinned Go modules, once: the binaries are kept under .cache/kube/<version>-<hash of
 * go.mod+go.sum>. A cold build takes minutes on two cores, half an hour on a busy one (Go's own
 * build cache makes later ones a relink). Progress goes to stderr, the build's output to
 * `<logDir>/go-build.log`.
 * @returns the binaries, and the seconds spent building (0 when they were already built).
 * @throws HarnessError, in one line naming the log, when the build fails.
 */
export async function ensureKubeBinaries(
  logDir: string,
): Promise<{ readonly binaries: KubeBinaries; readonly buildSeconds: number }> {
  const bins = locate();
  if (built(bins)) return { binaries: bins, buildSeconds: 0 };

  const began = Date.now();
  const logFile = path.join(logDir, 'go-build.log');
  const staging = `${bins.dir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  progress(
    `building the Kubernetes control plane from its Go modules (cold: several minutes): Kubernetes ${bins.kubernetesVersion} ` +
      `(kube-apiserver, kube-controller-manager, kube-scheduler) and etcd ${bins.etcdVersion} with go build into ${bins.dir} ` +
      `(log: ${logFile})…`,
  );
  const ticker = setInterval(
    () => progress(`still building the control plane (${secondsSince(began)}s)`),
    30_000,
  );
  try {
    await runLogged(
      'go',
      [
        'build',
        '-ldflags=-s -w',
        '-o',
        `${staging}/`,
        'k8s.io/kubernetes/cmd/kube-apiserver',
        'k8s.io/kubernetes/cmd/kube-controller-manager',
        'k8s.io/kubernetes/cmd/kube-scheduler',
        'go.etcd.io/etcd/server/v3',
      ],
      { cwd: buildModule, logFile, env: { ...process.env, GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' } },
    );
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || /could not run go/.test(String(error))) {
      throw new HarnessError(
        `the Go toolchain (\`go\`) is needed to build the test control plane; install Go 1.24+`,
        { cause: error },
      );
    }
    const exit = /exited with (\S+);/.exec(String(error))?.[1] ?? 'an error';
    throw new HarnessError(
      `building the Kubernetes control plane failed after ${secondsSince(began)}s (go build exited with ${exit}); see ${logFile}`,
      { cause: error },
    );
  } finally {
    clearInterval(ticker);
  }
  // `go build` names etcd's main package after its module path: server.
  fs.renameSync(path.join(staging, 'server'), path.join(staging, 'etcd'));
  fs.rmSync(bins.dir, { recursive: true, force: true });
  fs.renameSync(staging, bins.dir);
  const buildSeconds = secondsSince(began);
  progress(`control plane built in ${buildSeconds}s`);
  return { binaries: bins, buildSeconds };
}
