import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import type { CapacityType } from '../../core/index.ts';
import {
  type CachedInstanceType,
  CatalogUnavailableError,
  type OfferingCatalog,
  offeringKeyString,
} from '../../ports/cloud.ts';
import type { OfferingCache, UnavailableOffering, UnavailableOfferings } from '../../ports/state.ts';
import type { Logger } from '../../runtime/logger.ts';
import { call } from './errors.ts';

/** DynamoDB refuses items over 400 KB; catalog chunks stay well below. */
const MAX_CHUNK_BYTES = 300_000;
const BATCH_SIZE = 25;

export interface DynamoStateOptions {
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  readonly logger: Logger;
  /** How long a catalog generation lives after it was written. @default 2 days */
  readonly catalogRetentionSeconds?: number;
  /** For `expiresAt` of catalog items; defaults to the system clock. */
  readonly now?: () => Date;
}

const catalogPk = (region: string) => `catalog#${region}`;
const CURRENT = 'current';
const chunkSk = (generation: string, index: number) => `gen#${generation}#${String(index).padStart(5, '0')}`;

/**
 * Splits instance types into JSON chunks of at most `maxBytes` each (UTF-8), so no DynamoDB
 * item comes near the 400 KB limit.
 */
export function chunkInstanceTypes(
  types: readonly CachedInstanceType[],
  maxBytes = MAX_CHUNK_BYTES,
): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 2;
  for (const type of types) {
    const json = JSON.stringify(type);
    const bytes = Buffer.byteLength(json, 'utf8') + 1;
    if (bytes + 2 > maxBytes) {
      throw new Error(
        `instance type ${type.name} alone is ${bytes} bytes, over the ${maxBytes}-byte chunk limit`,
      );
    }
    if (size + bytes > maxBytes && current.length > 0) {
      chunks.push(`[${current.join(',')}]`);
      current = [];
      size = 2;
    }
    current.push(json);
    size += bytes;
  }
  if (current.length > 0) chunks.push(`[${current.join(',')}]`);
  return chunks;
}

/**
 * The offering cache in DynamoDB. A catalog is written as numbered chunks under a new
 * generation, then a `current` pointer item switches readers to it at once; the generation
 * before stays readable for in-flight readers and older ones are deleted.
 */
export function makeDynamoOfferingCache(options: DynamoStateOptions): OfferingCache {
  const { dynamodb, tableName, logger } = options;
  const now = options.now ?? (() => new Date());
  const retention = options.catalogRetentionSeconds ?? 2 * 24 * 3600;
  /** The last catalog read per region. */
  const read = new Map<string, OfferingCatalog>();

  /** Every chunk item of a catalog generation (only their keys when `keysOnly`), all pages. */
  async function generationItems(
    region: string,
    generation: string,
    keysOnly: boolean,
  ): Promise<Record<string, AttributeValue>[]> {
    const items: Record<string, AttributeValue>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await call('dynamodb:Query', () =>
        dynamodb.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
            ExpressionAttributeValues: {
              ':pk': { S: catalogPk(region) },
              ':prefix': { S: `gen#${generation}#` },
            },
            ...(keysOnly ? { ProjectionExpression: 'pk, sk' } : {}),
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  const chunkKeys = (region: string, generation: string) => generationItems(region, generation, true);

  return {
    async writeCatalog(catalog) {
      const chunks = chunkInstanceTypes(catalog.instanceTypes);
      const expiresAt = String(Math.ceil(now().getTime() / 1000) + retention);
      await batchWrite(
        dynamodb,
        tableName,
        chunks.map((data, index) => ({
          PutRequest: {
            Item: {
              pk: { S: catalogPk(catalog.region) },
              sk: { S: chunkSk(catalog.generation, index) },
              data: { S: data },
              expiresAt: { N: expiresAt },
            },
          },
        })),
      );
      const previous = await readPointer(dynamodb, tableName, catalog.region);
      await call('dynamodb:PutItem', () =>
        dynamodb.send(
          new PutItemCommand({
            TableName: tableName,
            Item: {
              pk: { S: catalogPk(catalog.region) },
              sk: { S: CURRENT },
              generation: { S: catalog.generation },
              previousGeneration: { S: previous?.generation ?? '' },
              refreshedAt: { S: catalog.refreshedAt },
              chunks: { N: String(chunks.length) },
              instanceTypes: { N: String(catalog.instanceTypes.length) },
            },
          }),
        ),
      );
      // Keep the generation just replaced for readers in flight; delete the one before it.
      if (previous?.previousGeneration && previous.previousGeneration !== catalog.generation) {
        const stale = await chunkKeys(catalog.region, previous.previousGeneration);
        await batchWrite(
          dynamodb,
          tableName,
          stale.map((Key) => ({ DeleteRequest: { Key } })),
        );
      }
      logger.info('offering cache written', {
        region: catalog.region,
        generation: catalog.generation,
        instanceTypes: catalog.instanceTypes.length,
        chunks: chunks.length,
      });
    },

    async readCatalog(region) {
      const pointer = await readPointer(dynamodb, tableName, region);
      if (pointer === undefined) return undefined;
      // A generation never changes once its pointer is written: a warm container that read it
      // reads only the pointer again.
      const cached = read.get(region);
      if (cached !== undefined && cached.generation === pointer.generation) return cached;
      const items = await generationItems(region, pointer.generation, false);
      if (items.length !== pointer.chunks) {
        throw new CatalogUnavailableError(
          `offering cache for ${region} generation ${pointer.generation} has ${items.length} of ${pointer.chunks} chunks; the catalog refresh is probably mid-write or failed, it heals on the next refresh`,
        );
      }
      const instanceTypes = items.flatMap(
        (item) => JSON.parse(item['data']?.S ?? '[]') as CachedInstanceType[],
      );
      const catalog = {
        region,
        generation: pointer.generation,
        refreshedAt: pointer.refreshedAt,
        instanceTypes,
      };
      read.set(region, catalog);
      return catalog;
    },
  } satisfies OfferingCache;
}

async function readPointer(dynamodb: DynamoDBClient, tableName: string, region: string) {
  const result = await call('dynamodb:GetItem', () =>
    dynamodb.send(
      new GetItemCommand({
        TableName: tableName,
        Key: { pk: { S: catalogPk(region) }, sk: { S: CURRENT } },
        ConsistentRead: true,
      }),
    ),
  );
  const item = result.Item;
  if (item === undefined) return undefined;
  return {
    generation: item['generation']?.S ?? '',
    previousGeneration: item['previousGeneration']?.S ?? '',
    refreshedAt: item['refreshedAt']?.S ?? '',
    chunks: Number(item['chunks']?.N ?? '0'),
  };
}

async function batchWrite(
  dynamodb: DynamoDBClient,
  tableName: string,
  requests: WriteRequest[],
): Promise<void> {
  for (let i = 0; i < requests.length; i += BATCH_SIZE) {
    let pending: WriteRequest[] = requests.slice(i, i + BATCH_SIZE);
    for (let round = 0; pending.length > 0; round++) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** round)));
      if (round >= 8) {
        throw new Error(
          `DynamoDB left ${pending.length} writes unprocessed after ${round} rounds on ${tableName}`,
        );
      }
      const result = await call('dynamodb:BatchWriteItem', () =>
        dynamodb.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: pending } })),
      );
      pending = result.UnprocessedItems?.[tableName] ?? [];
    }
  }
}

const UNAVAILABLE_PK = 'unavailable';

/**
 * ICE back-offs in DynamoDB, one item per offering. Expiry is decided on read against the caller's
 * clock; `expiresAt` (a minute after the back-off ends) only lets DynamoDB TTL clean up.
 */
export function makeDynamoUnavailableOfferings(
  options: Omit<DynamoStateOptions, 'now'>,
): UnavailableOfferings {
  const { dynamodb, tableName, logger } = options;
  return {
    async mark(offerings, reason, now, ttlSeconds) {
      if (offerings.length === 0) return;
      const untilMs = now.getTime() + ttlSeconds * 1000;
      const unique = new Map(offerings.map((o) => [offeringKeyString(o), o]));
      await batchWrite(
        dynamodb,
        tableName,
        [...unique].map(([key, o]) => ({
          PutRequest: {
            Item: {
              pk: { S: UNAVAILABLE_PK },
              sk: { S: key },
              instanceType: { S: o.instanceType },
              zone: { S: o.zone },
              capacityType: { S: o.capacityType },
              ...(o.reservationId === undefined ? {} : { reservationId: { S: o.reservationId } }),
              ...(o.placementGroupId === undefined ? {} : { placementGroupId: { S: o.placementGroupId } }),
              ...(o.partition === undefined ? {} : { partition: { S: o.partition } }),
              reason: { S: reason },
              untilMs: { N: String(untilMs) },
              expiresAt: { N: String(Math.ceil(untilMs / 1000) + 60) },
            },
          },
        })),
      );
      logger.info('offerings marked unavailable', {
        reason,
        offerings: [...unique.keys()].slice(0, 10),
        count: unique.size,
        until: new Date(untilMs).toISOString(),
      });
    },

    async list(now) {
      const out = new Map<string, UnavailableOffering>();
      let start: Record<string, AttributeValue> | undefined;
      do {
        const page = await call('dynamodb:Query', () =>
          dynamodb.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: 'pk = :pk',
              ExpressionAttributeValues: { ':pk': { S: UNAVAILABLE_PK } },
              ConsistentRead: true,
              ...(start ? { ExclusiveStartKey: start } : {}),
            }),
          ),
        );
        for (const item of page.Items ?? []) {
          const untilMs = Number(item['untilMs']?.N ?? '0');
          if (untilMs <= now.getTime()) continue;
          const offering: UnavailableOffering = {
            instanceType: item['instanceType']?.S ?? '',
            zone: item['zone']?.S ?? '',
            capacityType: (item['capacityType']?.S ?? 'on-demand') as CapacityType,
            ...(item['reservationId']?.S === undefined ? {} : { reservationId: item['reservationId'].S }),
            ...(item['placementGroupId']?.S === undefined
              ? {}
              : { placementGroupId: item['placementGroupId'].S }),
            ...(item['partition']?.S === undefined ? {} : { partition: item['partition'].S }),
            reason: item['reason']?.S ?? '',
            untilMs,
          };
          out.set(offeringKeyString(offering), offering);
        }
        start = page.LastEvaluatedKey;
      } while (start);
      return out;
    },
  };
}
