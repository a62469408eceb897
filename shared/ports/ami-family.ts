import type { AmiFamily, AmiSelectorTerm } from './ec2nodeclass.ts';

// The AMI family of an EC2NodeClass, read from its spec alone: both the AWS adapter (which AMIs
// and user data to use) and the drift check (the class hash covers the resolved family, so an
// alias and the same family named in `amiFamily` hash alike) need it.

/** `family@version`, e.g. `al2023@latest` or `bottlerocket@v1.20.0`. */
export const ALIAS_PATTERN = /^([a-z0-9]+)@(latest|v[0-9][0-9a-zA-Z.\-_]*)$/;

/** The AMI family an alias names (`al2023@latest` → AL2023), or undefined. */
export function aliasFamily(alias: string): AmiFamily | undefined {
  const family = ALIAS_PATTERN.exec(alias)?.[1];
  switch (family) {
    case 'al2023':
      return 'AL2023';
    case 'bottlerocket':
      return 'Bottlerocket';
    case 'al2':
      return 'AL2';
    case 'windows2019':
      return 'Windows2019';
    case 'windows2022':
      return 'Windows2022';
    case 'windows2025':
      return 'Windows2025';
    default:
      return undefined;
  }
}

/** The AMI family of a NodeClass: its alias's family, else `spec.amiFamily`. */
export function nodeClassFamily(spec: {
  readonly amiSelectorTerms: readonly AmiSelectorTerm[];
  readonly amiFamily?: AmiFamily;
}): AmiFamily | undefined {
  const alias = spec.amiSelectorTerms.find((t) => t.alias !== undefined)?.alias;
  return (alias === undefined ? undefined : aliasFamily(alias)) ?? spec.amiFamily;
}

/** The Windows Server families and the build (`node.kubernetes.io/windows-build`) of each. */
export const WINDOWS_BUILDS = {
  Windows2019: '10.0.17763',
  Windows2022: '10.0.20348',
  Windows2025: '10.0.26100',
} as const satisfies Partial<Record<AmiFamily, string>>;

/** The Windows build a family's nodes run, or undefined for a Linux (or Custom) family. */
export function windowsBuild(family: AmiFamily | undefined): string | undefined {
  return family !== undefined && family in WINDOWS_BUILDS
    ? WINDOWS_BUILDS[family as keyof typeof WINDOWS_BUILDS]
    : undefined;
}
