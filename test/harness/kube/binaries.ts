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
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  /** Seconds spent building; 0 when the cached binaries were used. */
  readonly buildSeconds: number;
}

const buildModule = path.join(import.meta.dirname, 'build');

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

/**
 * Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler with `go build` from
 * the pinned Go modules, once: the binaries are kept under .cache/kube/<hash of go.mod+go.sum>.
 * A cold build takes minutes on two cores (Go's own build cache makes later ones a relink).
 */
export async function ensureKubeBinaries(logDir: string): Promise<KubeBinaries> {
  const versions = pinnedVersions();
  const key = createHash('sha256')
    .update(fs.readFileSync(path.join(buildModule, 'go.mod')))
    .update(fs.readFileSync(path.join(buildModule, 'go.sum')))
    .digest('hex')
    .slice(0, 16);
  const binDir = path.join(cacheDir, 'kube', `${versions.kubernetes}-${key}`);
  const bins = {
    kubernetesVersion: versions.kubernetes,
    etcdVersion: versions.etcd,
    etcd: path.join(binDir, 'etcd'),
    kubeApiserver: path.join(binDir, 'kube-apiserver'),
    kubeControllerManager: path.join(binDir, 'kube-controller-manager'),
    kubeScheduler: path.join(binDir, 'kube-scheduler'),
  };
  const all = [bins.etcd, bins.kubeApiserver, bins.kubeControllerManager, bins.kubeScheduler];
  if (all.every((file) => fs.existsSync(file))) return { ...bins, buildSeconds: 0 };

  const began = Date.now();
  const logFile = path.join(logDir, 'go-build.log');
  const staging = `${binDir}.partial-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  progress(
    `building Kubernetes ${versions.kubernetes} (kube-apiserver, kube-controller-manager, kube-scheduler) and etcd ${versions.etcd} with go build; ` +
      `a cold build takes several minutes, later runs reuse ${binDir} (log: ${logFile})`,
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
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || /could not run go/.test(String(error))) {
      throw new HarnessError(
        'the Go toolchain (`go`) is needed to build the test control plane; install Go 1.24+',
        {
          cause: error,
        },
      );
    }
    throw error;
  } finally {
    clearInterval(ticker);
  }
  // `go build` names etcd's main package after its module path: server.
  fs.renameSync(path.join(staging, 'server'), path.join(staging, 'etcd'));
  fs.rmSync(binDir, { recursive: true, force: true });
  fs.renameSync(staging, binDir);
  const buildSeconds = secondsSince(began);
  progress(`control plane built in ${buildSeconds}s`);
  return { ...bins, buildSeconds };
}
