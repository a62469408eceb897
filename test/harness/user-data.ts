import { parse as parseToml } from 'smol-toml';
import { parseAllDocuments } from 'yaml';

/** A taint as kubelet registers it. */
export interface RegisterTaint {
  readonly key: string;
  readonly value?: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** Quantities kubelet reserves, as written in its configuration ("100m", "1Gi", "10%"). */
export type ReservedMap = Readonly<Record<string, string>>;

/** What the user data of an instance asks kubelet to register with. */
export interface KubeletRegistration {
  /**
   * Which bootstrap read it: nodeadm (AL2023), Bottlerocket's settings, AL2's bootstrap.sh,
   * Windows's Start-EKSBootstrap.ps1, or bare kubelet flags in a script.
   */
  readonly format: 'nodeadm' | 'bottlerocket' | 'bootstrap.sh' | 'windows' | 'shell' | 'none';
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly RegisterTaint[];
  readonly maxPods?: number;
  readonly kubeReserved?: ReservedMap;
  readonly systemReserved?: ReservedMap;
  readonly evictionHard?: ReservedMap;
  readonly clusterName?: string;
}

const effects = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

/**
 * Reads the node labels, taints, maxPods and reservations that an instance's user data passes
 * to kubelet, the way each bootstrap would: an AL2023 nodeadm NodeConfig (plain or inside a MIME
 * multipart document), Bottlerocket TOML settings, an AL2 `/etc/eks/bootstrap.sh` call (plain or
 * in a MIME part), a Windows `<powershell>` block calling `Start-EKSBootstrap.ps1`, or kubelet
 * flags in a shell script.
 */
export function parseKubeletRegistration(userData: string): KubeletRegistration {
  const text = userData.trim();
  if (text === '') return { format: 'none', labels: {}, taints: [] };
  const nodeConfigs = nodeadmDocuments(text);
  if (nodeConfigs.length > 0) return fromNodeConfigs(nodeConfigs);
  const bottlerocket = bottlerocketSettings(text);
  if (bottlerocket) return bottlerocket;
  const windows = windowsBootstrap(text);
  if (windows) return windows;
  const bodies = /^MIME-Version:/im.test(text) ? mimeParts(text) : [text];
  for (const body of bodies) {
    const bootstrap = eksBootstrap(body);
    if (bootstrap) return bootstrap;
  }
  return { format: 'shell', ...fromFlags(text.match(/--[a-z-]+=("[^"]*"|'[^']*'|\S+)/g) ?? []) };
}

/** The arguments of the last line that runs `command`, with line continuations joined. */
function invocation(text: string, command: RegExp): string | undefined {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .replace(/`\r?\n/g, ' ')
    .split(/\r?\n/);
  const line = lines.filter((l) => command.test(l)).at(-1);
  return line?.slice((command.exec(line)?.index ?? 0) + (command.exec(line)?.[0].length ?? 0));
}

/**
 * Words as bash or PowerShell splits them: a single-quoted string is (part of) one word, a quote
 * inside written `'\''` (bash) or `''` (PowerShell); double quotes are kept for kubelet to read.
 */
function words(args: string, shell: 'bash' | 'powershell'): string[] {
  const out: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < args.length; i += 1) {
    const c = args[i] ?? '';
    if (c === "'") {
      inWord = true;
      let j = i + 1;
      for (; j < args.length; j += 1) {
        if (args[j] !== "'") {
          word += args[j];
          continue;
        }
        if (shell === 'powershell' && args[j + 1] === "'") {
          word += "'";
          j += 1;
          continue;
        }
        break;
      }
      i = j;
    } else if (c === '\\' && shell === 'bash') {
      // An escaped character outside quotes (`'\''` puts a quote inside a quoted word).
      word += args[i + 1] ?? '';
      inWord = true;
      i += 1;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) out.push(word);
  return out;
}

/** Kubelet flags as kubelet splits a command line: on spaces outside double quotes. */
function kubeletArgs(extra: string): string[] {
  return extra.match(/--[a-z-]+=("[^"]*"|\S+)/g) ?? [];
}

/** What `/etc/eks/bootstrap.sh <cluster> --kubelet-extra-args '…'` passes to kubelet (AL2). */
function eksBootstrap(body: string): KubeletRegistration | undefined {
  const args = invocation(body, /\/etc\/eks\/bootstrap\.sh\b/);
  if (args === undefined) return undefined;
  const list = words(args, 'bash');
  const option = (name: string) => {
    const index = list.indexOf(name);
    return index === -1 ? undefined : list[index + 1];
  };
  const clusterName = list.find((w, i) => !w.startsWith('--') && (i === 0 || !list[i - 1]?.startsWith('--')));
  return fromKubeletFlags('bootstrap.sh', kubeletArgs(option('--kubelet-extra-args') ?? ''), clusterName);
}

/** What `Start-EKSBootstrap.ps1 -KubeletExtraArgs '…'` in a `<powershell>` block passes to kubelet. */
function windowsBootstrap(text: string): KubeletRegistration | undefined {
  const block = /<powershell>([\s\S]*?)<\/powershell>/i.exec(text)?.[1];
  if (block === undefined) return undefined;
  const script = /^\s*\[string\]\s*\$(\w+)\s*=\s*".*Start-EKSBootstrap\.ps1"/im.exec(block)?.[1];
  const command = script === undefined ? /Start-EKSBootstrap\.ps1['"]?/ : new RegExp(`&\\s*\\$${script}\\b`);
  const args = invocation(block, command);
  if (args === undefined) return undefined;
  const list = words(args, 'powershell');
  const option = (name: string) => {
    const index = list.findIndex((w) => w.toLowerCase() === name.toLowerCase());
    return index === -1 ? undefined : list[index + 1];
  };
  return fromKubeletFlags(
    'windows',
    kubeletArgs(option('-KubeletExtraArgs') ?? ''),
    option('-EKSClusterName'),
  );
}

function fromKubeletFlags(
  format: 'bootstrap.sh' | 'windows',
  flags: readonly string[],
  clusterName: string | undefined,
): KubeletRegistration {
  const values = new Map(
    flags.map((flag) => {
      const [name = '', ...rest] = flag.split('=');
      return [name, rest.join('=').replace(/^"|"$/g, '')] as const;
    }),
  );
  const map = (name: string, separator: string) => {
    const value = values.get(name);
    if (value === undefined) return undefined;
    return Object.fromEntries(
      value
        .split(',')
        .filter(Boolean)
        .map((pair) => {
          const at = pair.indexOf(separator);
          return [pair.slice(0, at), pair.slice(at + 1)];
        }),
    );
  };
  const kubeReserved = map('--kube-reserved', '=');
  const systemReserved = map('--system-reserved', '=');
  const evictionHard = map('--eviction-hard', '<');
  return {
    format,
    ...fromFlags(flags),
    ...(kubeReserved ? { kubeReserved } : {}),
    ...(systemReserved ? { systemReserved } : {}),
    ...(evictionHard ? { evictionHard } : {}),
    ...(clusterName ? { clusterName } : {}),
  };
}

type NodeConfig = {
  kind?: string;
  spec?: {
    cluster?: { name?: string };
    kubelet?: { config?: Record<string, unknown>; flags?: unknown[] };
  };
};

function nodeadmDocuments(text: string): NodeConfig[] {
  const bodies = /^MIME-Version:/im.test(text) || /multipart\/mixed/i.test(text) ? mimeParts(text) : [text];
  const configs: NodeConfig[] = [];
  for (const body of bodies) {
    if (!/kind:\s*NodeConfig/.test(body)) continue;
    for (const document of parseAllDocuments(body)) {
      const value = document.toJS() as NodeConfig | null;
      if (value?.kind === 'NodeConfig') configs.push(value);
    }
  }
  return configs;
}

function mimeParts(text: string): string[] {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(text)?.[1];
  if (!boundary) return [];
  return text
    .split(`--${boundary}`)
    .slice(1)
    .filter((part) => !part.startsWith('--'))
    .map((part) => {
      const split = part.search(/\r?\n\r?\n/);
      return split === -1 ? '' : part.slice(split).trim();
    });
}

function fromNodeConfigs(configs: NodeConfig[]): KubeletRegistration {
  // Later documents override earlier ones, as nodeadm merges them.
  let labels: Record<string, string> = {};
  let taints: RegisterTaint[] = [];
  let maxPods: number | undefined;
  let kubeReserved: ReservedMap | undefined;
  let systemReserved: ReservedMap | undefined;
  let evictionHard: ReservedMap | undefined;
  let clusterName: string | undefined;
  for (const config of configs) {
    const kubelet = config.spec?.kubelet;
    const settings = kubelet?.config ?? {};
    const flags = fromFlags(
      (kubelet?.flags ?? []).filter((flag): flag is string => typeof flag === 'string'),
    );
    labels = { ...labels, ...flags.labels };
    if (flags.taints.length > 0) taints = [...flags.taints];
    const registerWithTaints = settings['registerWithTaints'];
    if (Array.isArray(registerWithTaints)) taints = registerWithTaints.map(toTaint);
    if (typeof settings['maxPods'] === 'number') maxPods = settings['maxPods'];
    kubeReserved = stringMap(settings['kubeReserved']) ?? kubeReserved;
    systemReserved = stringMap(settings['systemReserved']) ?? systemReserved;
    evictionHard = stringMap(settings['evictionHard']) ?? evictionHard;
    clusterName = config.spec?.cluster?.name ?? clusterName;
  }
  return {
    format: 'nodeadm',
    labels,
    taints,
    ...(maxPods === undefined ? {} : { maxPods }),
    ...(kubeReserved ? { kubeReserved } : {}),
    ...(systemReserved ? { systemReserved } : {}),
    ...(evictionHard ? { evictionHard } : {}),
    ...(clusterName ? { clusterName } : {}),
  };
}

function bottlerocketSettings(text: string): KubeletRegistration | undefined {
  let document: Record<string, unknown>;
  try {
    document = parseToml(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const settings = document['settings'] as Record<string, unknown> | undefined;
  const kubernetes = settings?.['kubernetes'] as Record<string, unknown> | undefined;
  if (!kubernetes) return undefined;
  const labels = stringMap(kubernetes['node-labels']) ?? {};
  const taints: RegisterTaint[] = [];
  const nodeTaints = (kubernetes['node-taints'] ?? {}) as Record<string, unknown>;
  for (const [key, values] of Object.entries(nodeTaints)) {
    for (const entry of Array.isArray(values) ? values : [values]) {
      taints.push(taintFromSpec(key, String(entry)));
    }
  }
  const maxPods = kubernetes['max-pods'];
  const kubeReserved = stringMap(kubernetes['kube-reserved']);
  const systemReserved = stringMap(kubernetes['system-reserved']);
  const evictionHard = stringMap(kubernetes['eviction-hard']);
  const clusterName = kubernetes['cluster-name'];
  return {
    format: 'bottlerocket',
    labels,
    taints,
    ...(typeof maxPods === 'number' ? { maxPods } : {}),
    ...(kubeReserved ? { kubeReserved } : {}),
    ...(systemReserved ? { systemReserved } : {}),
    ...(evictionHard ? { evictionHard } : {}),
    ...(typeof clusterName === 'string' ? { clusterName } : {}),
  };
}

function fromFlags(
  flags: readonly string[],
): Pick<KubeletRegistration, 'labels' | 'taints'> & { maxPods?: number } {
  const labels: Record<string, string> = {};
  const taints: RegisterTaint[] = [];
  let maxPods: number | undefined;
  for (const raw of flags) {
    const [name, ...rest] = raw.split('=');
    const value = rest.join('=').replace(/^["']|["']$/g, '');
    if (name === '--node-labels') {
      for (const pair of value.split(',').filter(Boolean)) {
        const [key, ...labelValue] = pair.split('=');
        if (key) labels[key] = labelValue.join('=');
      }
    } else if (name === '--register-with-taints') {
      for (const spec of value.split(',').filter(Boolean)) {
        const [keyValue = '', effect = ''] = spec.split(':');
        const [key = '', taintValue] = keyValue.split('=');
        taints.push(taintFromSpec(key, `${taintValue ?? ''}:${effect}`));
      }
    } else if (name === '--max-pods') {
      maxPods = Number(value);
    }
  }
  return { labels, taints, ...(maxPods === undefined ? {} : { maxPods }) };
}

/** `value:Effect` or a bare `Effect` (Bottlerocket and kubelet flag syntax) into a taint. */
function taintFromSpec(key: string, spec: string): RegisterTaint {
  if (effects.has(spec)) return toTaint({ key, effect: spec });
  const separator = spec.lastIndexOf(':');
  const value = separator === -1 ? spec : spec.slice(0, separator);
  const effect = separator === -1 ? '' : spec.slice(separator + 1);
  return toTaint({ key, value, effect });
}

function toTaint(raw: unknown): RegisterTaint {
  const taint = raw as { key?: unknown; value?: unknown; effect?: unknown };
  const effect = String(taint.effect ?? '');
  if (typeof taint.key !== 'string' || !effects.has(effect)) {
    throw new Error(`kubelet would refuse taint ${JSON.stringify(raw)}: it needs a key and an effect`);
  }
  const value = taint.value === undefined || taint.value === '' ? {} : { value: String(taint.value) };
  return { key: taint.key, effect: effect as RegisterTaint['effect'], ...value };
}

function stringMap(value: unknown): Record<string, string> | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, String(entry)]));
}
