import { z } from 'zod';
import { makeEc2CatalogSource } from '../../shared/adapters/aws/catalog-source.ts';
import { makeAwsClients } from '../../shared/adapters/aws/clients.ts';
import { makeDynamoOfferingCache } from '../../shared/adapters/aws/dynamo-state.ts';
import { makeLaunchTemplateStore } from '../../shared/adapters/aws/launch-templates.ts';
import { fallbackOnDemandPrices, makePricingApiOnDemandPrices } from '../../shared/adapters/aws/pricing.ts';
import { systemClock } from '../../shared/ports/clock.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { makeLogger } from '../../shared/runtime/logger.ts';
import { shadowModeSetting, switchSetting } from '../../shared/runtime/switch.ts';
import type { RefreshCatalogResult } from '../../shared/usecases/catalog/refresh.ts';
import { setUpCatalog } from '../../shared/usecases/catalog/setup.ts';
import { parseLambdaEnv } from '../common/env.ts';

const Env = z.object({
  AWS_REGION: z.string().min(1),
  [EnvVar.clusterName]: z.string().min(1),
  [EnvVar.stateTable]: z.string().min(1),
  [EnvVar.logLevel]: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  [EnvVar.isolatedVPC]: switchSetting,
  [EnvVar.mode]: shadowModeSetting,
});

// Built once per cold start.
const config = parseLambdaEnv('catalog', Env, process.env);
const shadow = config[EnvVar.mode];
const logger = makeLogger(
  { lambda: 'catalog', cluster: config[EnvVar.clusterName], ...(shadow ? { shadow: true } : {}) },
  { level: config[EnvVar.logLevel] },
);
const clients = makeAwsClients({ region: config.AWS_REGION, logger });
const catalog = setUpCatalog({
  source: makeEc2CatalogSource({
    ec2: clients.ec2,
    region: config.AWS_REGION,
    clock: systemClock,
    logger,
    // In an isolated VPC (Karpenter's ISOLATED_VPC) the Pricing API, which has no VPC endpoint, is
    // never called: on-demand prices are the bundled table's.
    onDemandPrices: config[EnvVar.isolatedVPC]
      ? fallbackOnDemandPrices
      : makePricingApiOnDemandPrices(clients.pricing),
  }),
  cache: makeDynamoOfferingCache({
    dynamodb: clients.dynamodb,
    tableName: config[EnvVar.stateTable],
    logger,
  }),
  logger,
  // The cluster's launch templates are the live autoscaler's to clean up: a shadow stack makes none.
  ...(shadow
    ? {}
    : {
        launchTemplates: makeLaunchTemplateStore({
          ec2: clients.ec2,
          clusterName: config[EnvVar.clusterName],
          now: () => systemClock.now(),
          logger,
        }),
      }),
});

/** EventBridge schedule target: refreshes the offering cache. The event itself carries nothing. */
export async function handler(_event: unknown): Promise<RefreshCatalogResult> {
  return catalog.refresh();
}
