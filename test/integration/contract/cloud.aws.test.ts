import { EC2Client, RunInstancesCommand } from '@aws-sdk/client-ec2';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeEc2CatalogSource } from '../../../shared/adapters/aws/catalog-source.ts';
import { makeManualClock } from '../../../shared/ports/clock.ts';
import type { Cloud, OfferingCatalog } from '../../../shared/ports/cloud.ts';
import { describeCloudContract } from '../../contract/cloud-contract.ts';
import { awsConfigAs } from '../../harness/aws/identity.ts';
import { type Moto, moto, resetMoto } from '../../harness/index.ts';
import { setUpAccount } from '../aws/cloud-fixture.ts';
import { CLUSTER, silentLogger } from '../aws/fixtures.ts';
import { noCapacityFor } from '../aws/ice.ts';

const START = new Date('2026-11-21T10:00:00Z');
let server: Moto;
let catalog: OfferingCatalog;

beforeAll(async () => {
  server = await moto();
  await resetMoto(server);
  // moto's instance types do not change between resets: read the catalog once, as the catalog
  // Lambda reads it.
  catalog = await makeEc2CatalogSource({
    ec2: new EC2Client(awsConfigAs(server, 'catalog')),
    region: 'us-east-1',
    clock: makeManualClock(START),
    logger: silentLogger,
  }).fetchCatalog();
});

describeCloudContract('AWS adapter on moto', async () => {
  await resetMoto(server);
  const clock = makeManualClock(START);
  const account = await setUpAccount(server, clock);
  await account.as('catalog').cloud.offeringCache.writeCatalog(catalog);
  // Each method runs with the role of the Lambda that calls it in production: the provisioner
  // reads instance types, launches, gets and lists; the termination Lambda terminates (delete);
  // the interruption Lambda backs off the offering of an interrupted spot instance
  // (markUnavailable). The adapter's methods are closures, so they can be taken apart this way.
  const cloud: Cloud = {
    ...account.cloud,
    delete: account.as('termination').cloud.delete,
    markUnavailable: account.as('interruption').cloud.markUnavailable,
  };
  return {
    cloud,
    nodeClass: account.nodeClass,
    clock,
    clusterName: CLUSTER,
    zones: ['us-east-1a', 'us-east-1b', 'us-east-1c'],
    noCapacityFor: (type, zones) => noCapacityFor(account.lambdaEc2, type, zones),
    async launchForeignInstance() {
      const foreign = await account.ec2.send(
        new RunInstancesCommand({
          ImageId: account.amis.amd64,
          MinCount: 1,
          MaxCount: 1,
          InstanceType: 't3.micro',
        }),
      );
      return foreign.Instances?.[0]?.InstanceId ?? '';
    },
  };
});

describe('the moto subject of the contract', () => {
  it('has a catalog with on-demand and spot offerings in several zones to choose from', () => {
    const zones = new Set(catalog.instanceTypes.flatMap((t) => t.offerings.map((o) => o.zone)));
    const capacityTypes = new Set(
      catalog.instanceTypes.flatMap((t) => t.offerings.map((o) => o.capacityType)),
    );
    expect(catalog.instanceTypes.length).toBeGreaterThan(100);
    expect(zones.size).toBeGreaterThan(1);
    expect([...capacityTypes].sort()).toEqual(['on-demand', 'spot']);
  });
});
