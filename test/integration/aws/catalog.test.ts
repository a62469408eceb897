import { type AttributeValue, ScanCommand } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { PricingClient } from '@aws-sdk/client-pricing';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeEc2CatalogSource } from '../../../shared/adapters/aws/catalog-source.ts';
import { makeDynamoOfferingCache } from '../../../shared/adapters/aws/dynamo-state.ts';
import { makePricingApiOnDemandPrices } from '../../../shared/adapters/aws/pricing.ts';
import { parseEC2NodeClass } from '../../../shared/apis/index.ts';
import bundled from '../../../shared/catalog/instance-types.json' with { type: 'json' };
import { makeManualClock } from '../../../shared/ports/clock.ts';
import { CatalogUnavailableError, type EC2NodeClass } from '../../../shared/ports/cloud.ts';
import { EnvVar } from '../../../shared/runtime/env.ts';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import { refreshCatalog } from '../../../shared/usecases/catalog/refresh.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';
import { type LambdaAws, setUpAccount, TABLE } from './cloud-fixture.ts';
import { CLUSTER, nodeClassObject, silentLogger } from './fixtures.ts';
import { asLambda } from './lambda-cold-start.ts';

// The catalog Lambda's refresh, with its role: it reads EC2's instance types, offerings and prices,
// writes the offering cache and cleans up launch templates. The provisioner reads the cache
// (instanceTypes) and the interruption Lambda backs off offerings, each with its own role; the
// account's own client scans the table to inspect it.

let server: Moto;
const clock = makeManualClock(new Date('2026-11-21T10:00:00Z'));
let account: Awaited<ReturnType<typeof setUpAccount>>;
let catalogLambda: LambdaAws;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
  clock.set(new Date('2026-11-21T10:00:00Z'));
  account = await setUpAccount(server, clock);
  catalogLambda = account.as('catalog');
});

/** Every item of the state table (Scan pages at 1 MB). */
async function scanAll() {
  const items: Record<string, AttributeValue>[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await account.dynamodb.send(
      new ScanCommand({ TableName: TABLE, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** The catalog Lambda's ports, as its handler builds them (`ec2` with a fault, if given). */
function ports(ec2 = catalogLambda.ec2) {
  return {
    source: makeEc2CatalogSource({ ec2, region: 'us-east-1', clock, logger: silentLogger }),
    cache: makeDynamoOfferingCache({
      dynamodb: catalogLambda.dynamodb,
      tableName: TABLE,
      logger: silentLogger,
      now: () => clock.now(),
    }),
    logger: silentLogger,
    launchTemplates: catalogLambda.cloud.launchTemplates,
  };
}

describe('catalog refresh into the DynamoDB offering cache', () => {
  it('stores instance types, zonal offerings and prices in chunks under the 400 KB item limit', async () => {
    await expect(account.cloud.instanceTypes(account.nodeClass)).rejects.toBeInstanceOf(
      CatalogUnavailableError,
    );
    const result = await refreshCatalog(ports());
    expect(result.instanceTypes).toBeGreaterThan(1000);

    const items = await scanAll();
    const chunks = items.filter((i) => i['sk']?.S?.startsWith('gen#'));
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(Buffer.byteLength(chunk['data']?.S ?? '')).toBeLessThan(300_000);

    const catalog = await ports().cache.readCatalog('us-east-1');
    expect(catalog?.instanceTypes).toHaveLength(result.instanceTypes);
    const m5 = catalog?.instanceTypes.find((t) => t.name === 'm5.large');
    expect(m5?.labels).toMatchObject({
      'kubernetes.io/arch': 'amd64',
      'karpenter.k8s.aws/instance-family': 'm5',
      'karpenter.k8s.aws/instance-category': 'm',
      'karpenter.k8s.aws/instance-generation': '5',
      'karpenter.k8s.aws/instance-cpu': '2',
      'karpenter.k8s.aws/instance-memory': '8192',
      'karpenter.k8s.aws/instance-hypervisor': 'nitro',
    });
    // On-demand from the generated fallback table, spot from moto's DescribeSpotPriceHistory.
    expect(m5?.offerings).toContainEqual({
      zone: 'us-east-1a',
      zoneId: 'use1-az6',
      capacityType: 'on-demand',
      priceUsdPerHour: 0.096,
    });
    expect(m5?.offerings).toContainEqual({
      zone: 'us-east-1a',
      zoneId: 'use1-az6',
      capacityType: 'spot',
      priceUsdPerHour: 0.00001,
    });
  });

  it('gives the provisioner instance types for a NodeClass: its zones, its AMIs, allocatable as Karpenter computes it', async () => {
    await refreshCatalog(ports());
    const types = await account.cloud.instanceTypes(account.nodeClass);
    const names = new Set(types.map((t) => t.name));
    expect(names.has('m6g.large')).toBe(true); // arm64 AMI published
    const gpu = 'karpenter.k8s.aws/instance-gpu-count';
    const accelerator = 'karpenter.k8s.aws/instance-accelerator-count';
    expect(types.some((t) => t.labels[gpu] !== undefined)).toBe(true); // nvidia AMI published
    expect(types.some((t) => t.labels[accelerator] !== undefined)).toBe(false); // no neuron AMI
    expect(names.has('inf2.xlarge')).toBe(false);
    const c5 = types.find((t) => t.name === 'c5.large');
    expect(new Set(c5?.offerings.map((o) => o.zone))).toEqual(
      new Set(['us-east-1a', 'us-east-1b', 'us-east-1c']),
    );
    expect(c5?.offerings.every((o) => o.available)).toBe(true);

    // Karpenter's published allocatable for the same types (shared/catalog/instance-types.json).
    for (const name of ['c5.large', 'm5.xlarge', 'r5.2xlarge', 'm6g.large']) {
      const type = types.find((t) => t.name === name);
      const reference = bundled.find((r) => r.name === name)?.karpenterAllocatable;
      if (type === undefined || reference === undefined) throw new Error(`${name} missing`);
      const allocatable = (resource: string) =>
        (type.capacity[resource] ?? 0) -
        (type.overhead.kubeReserved[resource] ?? 0) -
        (type.overhead.systemReserved[resource] ?? 0) -
        (type.overhead.evictionThreshold[resource] ?? 0);
      expect({
        name,
        cpu: allocatable('cpu'),
        memoryMiB: allocatable('memory') / MiB,
        pods: type.capacity['pods'],
      }).toEqual({
        name,
        cpu: reference.cpuMillicores,
        memoryMiB: reference.memoryMiB,
        pods: reference.pods,
      });
      expect(allocatable('ephemeral-storage')).toBe(reference.ephemeralStorageGiB * GiB);
    }

    const dense: EC2NodeClass = {
      ...parseEC2NodeClass(nodeClassObject({ kubelet: { maxPods: 110 } })),
      status: account.nodeClass.status ?? { subnets: [], securityGroups: [], amis: [], conditions: [] },
    };
    const denseC5 = (await account.cloud.instanceTypes(dense)).find((t) => t.name === 'c5.large');
    expect(denseC5?.capacity['pods']).toBe(110);
  });

  it('shows ICE-backed-off offerings as unavailable until the back-off ends', async () => {
    await refreshCatalog(ports());
    await account
      .as('interruption')
      .cloud.markUnavailable(
        [{ instanceType: 'c5.large', zone: 'us-east-1b', capacityType: 'spot' }],
        'test',
      );
    const offering = async () =>
      (await account.cloud.instanceTypes(account.nodeClass))
        .find((t) => t.name === 'c5.large')
        ?.offerings.find((o) => o.zone === 'us-east-1b' && o.capacityType === 'spot');
    expect((await offering())?.available).toBe(false);
    clock.advance(181_000);
    expect((await offering())?.available).toBe(true);
  });

  it('switches readers to a new generation at once and deletes generations older than the previous one', async () => {
    const first = await refreshCatalog(ports());
    clock.advance(3600_000);
    const second = await refreshCatalog(ports());
    expect(second.generation).not.toBe(first.generation);
    expect((await ports().cache.readCatalog('us-east-1'))?.generation).toBe(second.generation);
    clock.advance(3600_000);
    const third = await refreshCatalog(ports());
    const items = await scanAll();
    const generations = new Set(
      items.flatMap((i) => (i['sk']?.S?.startsWith('gen#') ? [i['sk'].S.split('#')[1]] : [])),
    );
    expect(generations).toEqual(new Set([second.generation, third.generation]));
  });

  it('reads a generation once per container: later reads ask DynamoDB only for the pointer', async () => {
    await refreshCatalog(ports());
    const dynamodb = catalogLambda.dynamodb;
    const sent: string[] = [];
    dynamodb.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'count-catalog-reads' },
    );
    try {
      const reader = makeDynamoOfferingCache({ dynamodb, tableName: TABLE, logger: silentLogger });
      const first = await reader.readCatalog('us-east-1');
      expect(sent).toContain('QueryCommand');
      sent.length = 0;
      const again = await reader.readCatalog('us-east-1');
      expect(sent).toEqual(['GetItemCommand']);
      expect(again).toBe(first);

      clock.advance(3600_000);
      const next = await refreshCatalog(ports());
      sent.length = 0;
      const after = await reader.readCatalog('us-east-1');
      expect(after?.generation).toBe(next.generation);
      expect(sent).toContain('QueryCommand');
    } finally {
      dynamodb.middlewareStack.remove('count-catalog-reads');
    }
  });

  it('uses the bundled spot estimates when the spot price history cannot be read', async () => {
    const ec2 = new EC2Client(awsConfigAs(server, 'catalog'));
    ec2.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'DescribeSpotPriceHistoryCommand') {
          throw Object.assign(new Error('You are not authorized to perform this operation.'), {
            name: 'UnauthorizedOperation',
            $fault: 'client',
            $metadata: { httpStatusCode: 403 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'deny-spot-history' },
    );
    await refreshCatalog(ports(ec2));
    const catalog = await ports().cache.readCatalog('us-east-1');
    const c5 = catalog?.instanceTypes.find((t) => t.name === 'c5.large');
    const estimate = bundled.find((r) => r.name === 'c5.large')?.spotAdvisor?.['us-east-1']
      ?.estimatedSpotPriceUsd;
    expect(c5?.offerings.find((o) => o.capacityType === 'spot')?.priceUsdPerHour).toBe(estimate);
  });

  it('prices on-demand offerings from the bundled table when the Pricing API cannot be read, and says so', async () => {
    // moto serves no Pricing API, so GetProducts really fails over the wire here.
    const pricing = new PricingClient({ ...awsConfigAs(server, 'catalog'), maxAttempts: 1 });
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger(
      {},
      { sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const source = makeEc2CatalogSource({
      ec2: catalogLambda.ec2,
      region: 'us-east-1',
      clock,
      logger,
      onDemandPrices: makePricingApiOnDemandPrices(pricing),
    });
    await refreshCatalog({ ...ports(), source });
    const catalog = await ports().cache.readCatalog('us-east-1');
    const m5 = catalog?.instanceTypes.find((t) => t.name === 'm5.large');
    const table = bundled.find((r) => r.name === 'm5.large')?.onDemandPriceUsd['us-east-1'];
    expect(m5?.offerings.find((o) => o.capacityType === 'on-demand')?.priceUsdPerHour).toBe(table);
    expect(lines.map((l) => l['message'])).toContain('on-demand prices unavailable, using the bundled table');
  });

  it('runs as the catalog Lambda handler against the configured region and table', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      [EnvVar.clusterName]: CLUSTER,
      [EnvVar.stateTable]: TABLE,
      [EnvVar.logLevel]: 'error',
    });
    try {
      const { handler } = await asLambda(
        server,
        'catalog',
        () => import('../../../lambdas/catalog/handler.ts'),
      );
      const result = await asLambda(server, 'catalog', () =>
        handler({ 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} }),
      );
      expect(result.instanceTypes).toBeGreaterThan(1000);
      expect((await ports().cache.readCatalog('us-east-1'))?.generation).toBe(result.generation);
    } finally {
      process.env = saved;
    }
  });
});
