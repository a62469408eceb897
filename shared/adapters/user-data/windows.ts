// Windows user data: a `<powershell>` block running the NodeClass's own lines, then
// Start-EKSBootstrap.ps1 with the kubelet flags.
import { ValidationError } from '../../core/index.ts';
import { kubeletFlags, type UserDataOptions } from './node-settings.ts';

/** A string in single quotes for PowerShell. */
function powershellQuote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Custom PowerShell lines, run before the bootstrap in the same block. A custom block that wraps
 * itself in `<powershell>` tags is unwrapped; one that closes the block early cannot be merged.
 */
function customPowershell(nodeClassName: string, userData: string | undefined): string[] {
  let text = userData?.trim() ?? '';
  const wrapped = /^<powershell>([\s\S]*)<\/powershell>$/i.exec(text);
  if (wrapped) text = (wrapped[1] ?? '').trim();
  if (/<\/?powershell>/i.test(text)) {
    throw new ValidationError(
      `ec2NodeClass "${nodeClassName}"`,
      'spec.userData',
      'holds a <powershell> tag inside the script; Windows user data is PowerShell lines (optionally in one <powershell> block) that run before the bootstrap',
    );
  }
  return text === '' ? [] : [text];
}

export function renderWindows(options: UserDataOptions): string {
  const { cluster } = options;
  const dns = options.kubelet?.clusterDNS?.[0];
  const bootstrap = [
    '& $EKSBootstrapScriptFile',
    `-EKSClusterName ${powershellQuote(cluster.name)}`,
    `-APIServerEndpoint ${powershellQuote(cluster.endpoint)}`,
    `-Base64ClusterCA ${powershellQuote(cluster.caBundle)}`,
    `-KubeletExtraArgs ${powershellQuote(kubeletFlags(options).join(' '))}`,
    ...(dns === undefined ? [] : [`-DNSClusterIP ${powershellQuote(dns)}`]),
  ].join(' ');
  return [
    '<powershell>',
    ...customPowershell(options.nodeClassName, options.customUserData),
    '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"',
    bootstrap,
    '</powershell>',
    '',
  ].join('\n');
}
