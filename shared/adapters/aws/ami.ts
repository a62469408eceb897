import { DescribeImagesCommand, type EC2Client, type Filter, type Image } from '@aws-sdk/client-ec2';
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { Label } from '../../core/index.ts';
import { ALIAS_PATTERN, aliasFamily, nodeClassFamily, windowsBuild } from '../../ports/ami-family.ts';
import type { AmiFamily, AmiSelectorTerm, AmiStatus, NodeSelectorRequirement } from '../../ports/cloud.ts';
import { awsErrorCode, isNotFound, toCloudApiError } from './errors.ts';

export { aliasFamily, nodeClassFamily };

/** Why an AMI selection failed, in words for the EC2NodeClass condition. */
export class AmiSelectionProblem {
  constructor(
    readonly reason: string,
    readonly message: string,
  ) {}
}

export interface AmiResolution {
  readonly family: AmiFamily | undefined;
  readonly amis: readonly AmiStatus[];
}

export interface AmiContext {
  readonly ec2: EC2Client;
  readonly ssm: SSMClient;
  /** Kubernetes minor of the cluster, e.g. `1.34`. */
  readonly kubernetesVersion: string;
  /**
   * Root of AWS's public SSM parameters. @default '/aws/service'. Tests point it elsewhere because
   * AWS (and moto) refuse writes under `/aws/`.
   */
  readonly ssmParameterPrefix: string;
}

const GPU_COUNT = Label.instanceGpuCount;
const ACCELERATOR_COUNT = Label.instanceAcceleratorCount;

type Variant = 'standard' | 'nvidia' | 'neuron';

/** One SSM parameter an alias reads, and the instance types the image it names serves. */
export interface AliasParameter {
  readonly path: string;
  readonly arch: 'x86_64' | 'arm64';
  readonly variant: Variant;
  /** The Windows build of a Windows image (its nodes run Windows, not Linux). */
  readonly windowsBuild?: string;
}

/** SSM parameters an alias resolves through, with the variant each one serves (Karpenter's paths). */
export function aliasParameters(
  alias: string,
  kubernetesVersion: string,
  prefix = '/aws/service',
): readonly AliasParameter[] {
  const match = ALIAS_PATTERN.exec(alias);
  if (!match) return [];
  const [, family, version = 'latest'] = match;
  const out: AliasParameter[] = [];
  const build = windowsBuild(aliasFamily(alias));
  if (build !== undefined) {
    // AWS publishes only the latest Windows image per Kubernetes version (the CRD allows only @latest).
    const year = family?.replace('windows', '') ?? '';
    out.push({
      path: `${prefix}/ami-windows-latest/Windows_Server-${year}-English-Core-EKS_Optimized-${kubernetesVersion}/image_id`,
      arch: 'x86_64',
      variant: 'standard',
      windowsBuild: build,
    });
  } else if (family === 'al2') {
    const name = (kind: string) =>
      version === 'latest' ? 'recommended' : `amazon-eks-${kind}node-${kubernetesVersion}-${version}`;
    const base = `${prefix}/eks/optimized-ami/${kubernetesVersion}`;
    out.push(
      { path: `${base}/amazon-linux-2/${name('')}/image_id`, arch: 'x86_64', variant: 'standard' },
      { path: `${base}/amazon-linux-2-arm64/${name('arm64-')}/image_id`, arch: 'arm64', variant: 'standard' },
      { path: `${base}/amazon-linux-2-gpu/${name('gpu-')}/image_id`, arch: 'x86_64', variant: 'nvidia' },
      { path: `${base}/amazon-linux-2-gpu/${name('gpu-')}/image_id`, arch: 'x86_64', variant: 'neuron' },
    );
  } else if (family === 'al2023') {
    const variants: Record<'x86_64' | 'arm64', Variant[]> = {
      x86_64: ['standard', 'nvidia', 'neuron'],
      arm64: ['standard', 'nvidia'],
    };
    for (const arch of ['x86_64', 'arm64'] as const) {
      for (const variant of variants[arch]) {
        const name =
          version === 'latest'
            ? 'recommended'
            : `amazon-eks-node-al2023-${arch}-${variant}-${kubernetesVersion}-${version}`;
        out.push({
          path: `${prefix}/eks/optimized-ami/${kubernetesVersion}/amazon-linux-2023/${arch}/${variant}/${name}/image_id`,
          arch,
          variant,
        });
      }
    }
  } else if (family === 'bottlerocket') {
    const trimmed = version === 'latest' ? 'latest' : version.replace(/^v/, '');
    for (const arch of ['x86_64', 'arm64'] as const) {
      for (const variant of ['standard', 'nvidia'] as const) {
        const suffix = variant === 'nvidia' ? '-nvidia' : '';
        out.push({
          path: `${prefix}/bottlerocket/aws-k8s-${kubernetesVersion}${suffix}/${arch}/${trimmed}/image_id`,
          arch,
          variant,
        });
      }
    }
  }
  return out;
}

function archLabel(arch: string | undefined): string {
  return arch === 'arm64' ? 'arm64' : 'amd64';
}

function variantRequirements(variant: Variant): NodeSelectorRequirement[] {
  switch (variant) {
    case 'standard':
      return [
        { key: GPU_COUNT, operator: 'DoesNotExist' },
        { key: ACCELERATOR_COUNT, operator: 'DoesNotExist' },
      ];
    case 'nvidia':
      return [{ key: GPU_COUNT, operator: 'Exists' }];
    case 'neuron':
      return [{ key: ACCELERATOR_COUNT, operator: 'Exists' }];
  }
}

interface Candidate {
  readonly image: Image;
  readonly requirements: readonly NodeSelectorRequirement[];
}

/**
 * Resolves `spec.amiSelectorTerms` into AMIs with the requirements of the instance types each
 * serves, newest first, one per distinct requirement set (as Karpenter does).
 * @returns the family and AMIs, or an AmiSelectionProblem the user can fix.
 * @throws CloudApiError when AWS itself fails.
 */
export async function resolveAmis(
  context: AmiContext,
  terms: readonly AmiSelectorTerm[],
  specFamily: AmiFamily | undefined,
): Promise<AmiResolution | AmiSelectionProblem> {
  const alias = terms.find((term) => term.alias !== undefined)?.alias;
  if (alias !== undefined) return resolveAlias(context, alias);
  if (specFamily === undefined) {
    return new AmiSelectionProblem(
      'AMIFamilyRequired',
      'spec.amiFamily is required when spec.amiSelectorTerms has no alias; set amiFamily to the user data format of your AMIs: AL2023, AL2, Bottlerocket, Windows2019, Windows2022, Windows2025 or Custom',
    );
  }
  const candidates: Candidate[] = [];
  const ids = terms.flatMap((term) => (term.id === undefined ? [] : [term.id]));
  for (const term of terms) {
    if (term.ssmParameter !== undefined) {
      const id = await readParameter(context, term.ssmParameter);
      if (id === undefined) {
        return new AmiSelectionProblem(
          'AMINotFound',
          `SSM parameter ${term.ssmParameter} (spec.amiSelectorTerms[].ssmParameter) does not exist; fix the parameter name`,
        );
      }
      ids.push(id);
    }
  }
  if (ids.length > 0) candidates.push(...(await describe(context, { ImageIds: ids })).map(withArch));
  for (const query of amiQueries(terms)) {
    candidates.push(...(await describe(context, query)).map(withArch));
  }
  const amis = newestPerRequirements(candidates);
  if (amis.length === 0) {
    return new AmiSelectionProblem(
      'AMINotFound',
      `no AMI matches spec.amiSelectorTerms ${JSON.stringify(terms)} in this account and region (images selected by name must be owned by self or amazon unless the term sets owner); fix the terms or share the AMI`,
    );
  }
  return { family: specFamily, amis };
}

async function resolveAlias(
  context: AmiContext,
  alias: string,
): Promise<AmiResolution | AmiSelectionProblem> {
  const family = aliasFamily(alias);
  const parameters = aliasParameters(alias, context.kubernetesVersion, context.ssmParameterPrefix);
  if (family === undefined || parameters.length === 0) {
    return new AmiSelectionProblem(
      'UnsupportedAlias',
      `alias "${alias}" in spec.amiSelectorTerms is not supported: Flotilla resolves al2023@…, al2@…, bottlerocket@… (latest or v<version>) and windows2019@latest, windows2022@latest, windows2025@latest; change the alias`,
    );
  }
  const byImage = new Map<
    string,
    { arch: 'x86_64' | 'arm64'; variants: Variant[]; windowsBuild: string | undefined }
  >();
  const tried: string[] = [];
  const paths = new Map<string, string | undefined>();
  for (const parameter of parameters) {
    tried.push(parameter.path);
    // AL2's GPU parameter serves two variants: read it once.
    if (!paths.has(parameter.path)) paths.set(parameter.path, await readParameter(context, parameter.path));
    const id = paths.get(parameter.path);
    if (id === undefined) continue;
    const entry = byImage.get(id) ?? {
      arch: parameter.arch,
      variants: [],
      windowsBuild: parameter.windowsBuild,
    };
    entry.variants.push(parameter.variant);
    byImage.set(id, entry);
  }
  if (byImage.size === 0) {
    return new AmiSelectionProblem(
      'AMINotFound',
      `alias "${alias}" resolved to no AMI for Kubernetes ${context.kubernetesVersion}: none of the SSM parameters exist (first: ${tried[0]}); check the version in the alias or use ${alias.split('@')[0]}@latest`,
    );
  }
  const images = new Map(
    (await describe(context, { ImageIds: [...byImage.keys()] })).map((i) => [i.ImageId, i]),
  );
  const candidates: Candidate[] = [];
  for (const [id, { arch, variants, windowsBuild: build }] of byImage) {
    const image = images.get(id) ?? { ImageId: id, Architecture: arch };
    for (const variant of variants) {
      candidates.push({
        image,
        requirements: [
          { key: Label.arch, operator: 'In', values: [archLabel(arch)] },
          ...(build === undefined
            ? variantRequirements(variant)
            : [
                { key: Label.os, operator: 'In' as const, values: ['windows'] },
                { key: Label.windowsBuild, operator: 'In' as const, values: [build] },
              ]),
        ],
      });
    }
  }
  return { family, amis: newestPerRequirements(candidates) };
}

/**
 * DescribeImages queries for the name/tags/owner terms (id and ssmParameter terms are looked up
 * by id). A term with a name and no owner only matches images owned by `self` or `amazon`, so a
 * look-alike public image with the same name is never picked.
 */
export function amiQueries(terms: readonly AmiSelectorTerm[]): { Filters: Filter[]; Owners?: string[] }[] {
  const queries: { Filters: Filter[]; Owners?: string[] }[] = [];
  for (const term of terms) {
    if (term.id !== undefined || term.ssmParameter !== undefined || term.alias !== undefined) continue;
    const filters: Filter[] = [];
    if (term.name !== undefined) filters.push({ Name: 'name', Values: [term.name] });
    for (const [key, value] of Object.entries(term.tags ?? {})) {
      filters.push(
        value === '*' ? { Name: 'tag-key', Values: [key] } : { Name: `tag:${key}`, Values: [value] },
      );
    }
    if (filters.length === 0 && term.owner === undefined) continue;
    const owners =
      term.owner !== undefined ? [term.owner] : term.name !== undefined ? ['self', 'amazon'] : [];
    queries.push({ Filters: filters, ...(owners.length === 0 ? {} : { Owners: owners }) });
  }
  return queries;
}

function withArch(image: Image): Candidate {
  return {
    image,
    requirements: [{ key: Label.arch, operator: 'In', values: [archLabel(image.Architecture)] }],
  };
}

/** Newest first (non-deprecated before deprecated); one AMI per distinct requirement set. */
function newestPerRequirements(candidates: readonly Candidate[]): AmiStatus[] {
  const sorted = [...candidates].sort((a, b) => {
    const deprecated = Number(isDeprecated(a.image)) - Number(isDeprecated(b.image));
    if (deprecated !== 0) return deprecated;
    const byDate = (b.image.CreationDate ?? '').localeCompare(a.image.CreationDate ?? '');
    return byDate !== 0 ? byDate : (a.image.ImageId ?? '').localeCompare(b.image.ImageId ?? '');
  });
  const seen = new Set<string>();
  const out: AmiStatus[] = [];
  for (const { image, requirements } of sorted) {
    const key = JSON.stringify(requirements);
    if (seen.has(key) || image.ImageId === undefined) continue;
    seen.add(key);
    out.push({
      id: image.ImageId,
      ...(image.Name === undefined ? {} : { name: image.Name }),
      ...(isDeprecated(image) ? { deprecated: true } : {}),
      requirements,
    });
  }
  return out;
}

function isDeprecated(image: Image): boolean {
  return image.DeprecationTime !== undefined && Date.parse(image.DeprecationTime) <= Date.now();
}

async function describe(
  context: AmiContext,
  input: { ImageIds?: string[]; Filters?: Filter[]; Owners?: string[] },
): Promise<Image[]> {
  const images: Image[] = [];
  let nextToken: string | undefined;
  do {
    try {
      const page = await context.ec2.send(
        new DescribeImagesCommand({
          ...input,
          IncludeDeprecated: true,
          ...(nextToken === undefined ? {} : { NextToken: nextToken }),
        }),
      );
      images.push(...(page.Images ?? []));
      nextToken = page.NextToken;
    } catch (error) {
      // An image id that no longer exists is "no match", not an outage.
      if (awsErrorCode(error).startsWith('InvalidAMIID')) return images;
      throw toCloudApiError('ec2:DescribeImages', error);
    }
  } while (nextToken);
  return images;
}

async function readParameter(context: AmiContext, name: string): Promise<string | undefined> {
  try {
    const result = await context.ssm.send(new GetParameterCommand({ Name: name }));
    return result.Parameter?.Value;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    const code = awsErrorCode(error);
    const denied = code === 'AccessDeniedException' || code === 'AccessDenied';
    throw toCloudApiError(
      'ssm:GetParameter',
      error,
      denied && !name.startsWith('/aws/')
        ? `Flotilla's provisioner may read only AWS's public parameters unless the stack allows more: add the parameter's path to the stack's amiParameterPaths prop, or grant the provisioner's role ssm:GetParameter on ${name}`
        : '',
    );
  }
}
