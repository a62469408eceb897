import { bundledCatalogRegions, DEFAULT_REGION } from '../../adapters/memory/index.ts';
import { Label } from '../../core/index.ts';

// Where `flotilla plan` plans: the region whose prices it uses and the zones its EC2NodeClasses'
// subnets are in. The flags say so when given; otherwise the snapshot's Nodes do (their
// topology.kubernetes.io labels); otherwise the default region and its zones a, b and c.

/** Where the region and zones came from, for the plan's header. */
export type TopologySource = 'flags' | 'nodes' | 'default';

export interface PlanTopology {
  readonly region: string;
  readonly zones: readonly string[];
  readonly regionFrom: TopologySource;
  readonly zonesFrom: TopologySource;
}

/** A problem with the region or zones, and whether the flags (exit 2) or the snapshot (exit 1) caused it. */
export interface TopologyProblem {
  readonly problem: string;
  readonly fromFlags: boolean;
}

export interface TopologyInput {
  /** `--region`, when given. */
  readonly region?: string;
  /** `--zones`, when given: letters or zone names, comma-separated. */
  readonly zones?: string;
  /** The labels of the snapshot's Nodes. */
  readonly nodeLabels: readonly Readonly<Record<string, string>>[];
}

/** The region and zones to plan in, or what is wrong with them. */
export function resolveTopology(input: TopologyInput): PlanTopology | TopologyProblem {
  const known = bundledCatalogRegions();
  const knownList = [...known.keys()].join(', ');
  const nodeRegions = distinct(input.nodeLabels.map((l) => l[Label.region]));
  if (input.region === undefined && nodeRegions.length > 1) {
    return {
      problem: `the snapshot's Nodes are in several regions (${nodeRegions.join(', ')}); plan one at a time with --region`,
      fromFlags: false,
    };
  }
  const nodeRegion = nodeRegions[0];
  const region = input.region ?? nodeRegion ?? DEFAULT_REGION;
  const regionFrom: TopologySource =
    input.region !== undefined ? 'flags' : nodeRegion !== undefined ? 'nodes' : 'default';
  const regionZones = known.get(region);
  if (regionZones === undefined) {
    return {
      problem:
        regionFrom === 'flags'
          ? `--region ${region} is not a region the bundled catalog has prices for; it knows ${knownList}`
          : `the snapshot's Nodes are in region ${region}, which the bundled catalog has no prices for; it knows ${knownList} (plan with their prices with --region)`,
      fromFlags: regionFrom === 'flags',
    };
  }

  let zones: readonly string[];
  let zonesFrom: TopologySource;
  if (input.zones !== undefined) {
    zones = input.zones
      .split(',')
      .map((z) => z.trim())
      .filter((z) => z !== '')
      .map((z) => (/^[a-z]$/.test(z) ? `${region}${z}` : z));
    zonesFrom = 'flags';
    if (zones.length === 0) return { problem: '--zones names no zone', fromFlags: true };
  } else if (regionFrom !== 'default' && region === nodeRegion) {
    const fromNodes = distinct(
      input.nodeLabels.filter((l) => l[Label.region] === region).map((l) => l[Label.zone]),
    );
    zones = fromNodes.length > 0 ? fromNodes : defaultZones(region);
    zonesFrom = fromNodes.length > 0 ? 'nodes' : 'default';
  } else {
    zones = defaultZones(region);
    zonesFrom = 'default';
  }
  const foreign = zones.filter((z) => !regionZones.includes(z));
  if (foreign.length > 0) {
    const which = zonesFrom === 'flags' ? '--zones names' : "the snapshot's Nodes are in";
    return {
      problem: `${which} ${foreign.join(', ')}, not ${foreign.length === 1 ? 'a zone' : 'zones'} of ${region} (its zones: ${regionZones.join(', ')})`,
      fromFlags: zonesFrom === 'flags' || regionFrom === 'flags',
    };
  }
  return { region, zones, regionFrom, zonesFrom };
}

const defaultZones = (region: string) => ['a', 'b', 'c'].map((letter) => `${region}${letter}`);

function distinct(values: readonly (string | undefined)[]): string[] {
  return [...new Set(values.filter((v): v is string => v !== undefined && v !== ''))].sort();
}
