export { DEFAULT_METADATA_OPTIONS, parseEC2NodeClass } from '../../apis/index.ts';
export { aliasParameters, amiQueries, nodeClassFamily, resolveAmis } from './ami.ts';
export { type AwsCloud, type AwsCloudOptions, makeAwsCloud, markInterruptedOffering } from './aws-cloud.ts';
export { makeEc2CatalogSource } from './catalog-source.ts';
export {
  type AwsClientOptions,
  type AwsClients,
  awsClientConfig,
  computeBackoffMs,
  makeAwsClients,
  makeRetryStrategy,
  type RetryOptions,
} from './clients.ts';
export { makeDynamoOfferingCache, makeDynamoUnavailableOfferings } from './dynamo-state.ts';
export { CAPACITY_ERROR_CODES } from './errors.ts';
export { toInstanceTypes } from './instance-types.ts';
export { makeNodeClassResolver } from './nodeclass.ts';
export { fallbackOnDemandPrices, makePricingApiOnDemandPrices, pricingEndpointRegion } from './pricing.ts';
export { type ClusterInfo, renderUserData } from './user-data.ts';
