import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { STATE_TABLE } from '../../apis/state-table.ts';
import { ValidationError } from '../../core/errors.ts';
import type { Lease, LeaseStore } from '../../ports/lease.ts';

const sortKey = 'lease';
const key = (name: string) => ({
  [STATE_TABLE.partitionKey]: { S: `lease#${name}` },
  [STATE_TABLE.sortKey]: { S: sortKey },
});

/**
 * Leases as items of the state table (`pk = lease#<name>`, `sk = lease`), changed only by
 * conditional writes: taking a lease succeeds when there is no item, it has expired by the
 * caller's clock, or the caller already holds it; each change of holder bumps the fencing
 * token. The TTL attribute lets DynamoDB clean up long-dead leases.
 */
export class DynamoLeaseStore implements LeaseStore {
  constructor(
    private readonly dynamodb: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async acquire(name: string, holder: string, now: Date, ttlSeconds: number): Promise<Lease | undefined> {
    const expiresAtMs = now.getTime() + ttlSeconds * 1000;
    try {
      const result = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key(name),
          ConditionExpression: 'attribute_not_exists(#pk) OR #until < :now OR #holder = :holder',
          // Every acquisition gets a new fencing token, so work fenced by an older one stops.
          UpdateExpression:
            'SET #holder = :holder, #until = :until, #ttl = :ttl, #token = if_not_exists(#token, :zero) + :step REMOVE #released',
          ExpressionAttributeNames: {
            '#pk': STATE_TABLE.partitionKey,
            '#holder': 'holder',
            '#until': 'expiresAtMs',
            '#ttl': STATE_TABLE.ttlAttribute,
            '#token': 'token',
            '#released': 'releasedAtMs',
          },
          ExpressionAttributeValues: {
            ':holder': { S: holder },
            ':now': { N: String(now.getTime()) },
            ':until': { N: String(expiresAtMs) },
            ':ttl': { N: String(Math.ceil(expiresAtMs / 1000) + 86_400) },
            ':zero': { N: '0' },
            ':step': { N: '1' },
          },
          // The item as it was: the previous holder's end, and the token this one follows.
          ReturnValues: 'ALL_OLD',
        }),
      );
      const old = result.Attributes;
      const oldToken = Number(old?.['token']?.N ?? '0');
      const released = Number(old?.['releasedAtMs']?.N);
      const until = Number(old?.['expiresAtMs']?.N);
      const previousUntilMs =
        old === undefined
          ? undefined
          : Number.isFinite(released) && released > 0
            ? released
            : Number.isFinite(until)
              ? until
              : undefined;
      // Acquisitions leave the mark alone, so it carries over until a holder leaves another.
      const mark = Number(old?.['markMs']?.N);
      return {
        name,
        holder,
        token: (Number.isFinite(oldToken) ? oldToken : 0) + 1,
        expiresAtMs,
        ...(previousUntilMs === undefined ? {} : { previousUntilMs }),
        ...(Number.isFinite(mark) ? { previousMarkMs: mark } : {}),
      };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  async renew(lease: Lease, now: Date, ttlSeconds: number): Promise<Lease | undefined> {
    const expiresAtMs = now.getTime() + ttlSeconds * 1000;
    try {
      const result = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key(lease.name),
          ConditionExpression: '#holder = :holder AND #token = :token AND #until >= :now',
          UpdateExpression: 'SET #until = :until, #ttl = :ttl',
          ExpressionAttributeNames: {
            '#holder': 'holder',
            '#token': 'token',
            '#until': 'expiresAtMs',
            '#ttl': STATE_TABLE.ttlAttribute,
          },
          ExpressionAttributeValues: {
            ':holder': { S: lease.holder },
            ':token': { N: String(lease.token) },
            ':now': { N: String(now.getTime()) },
            ':until': { N: String(expiresAtMs) },
            ':ttl': { N: String(Math.ceil(expiresAtMs / 1000) + 86_400) },
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return toLease(lease.name, result.Attributes);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  async isHeld(lease: Lease, now: Date): Promise<boolean> {
    const result = await this.dynamodb.send(
      new GetItemCommand({ TableName: this.tableName, Key: key(lease.name), ConsistentRead: true }),
    );
    const current = result.Item ? toLease(lease.name, result.Item) : undefined;
    return (
      current !== undefined &&
      current.holder === lease.holder &&
      current.token === lease.token &&
      current.expiresAtMs >= now.getTime()
    );
  }

  async release(lease: Lease, now?: Date, markMs?: number): Promise<void> {
    try {
      // Expire rather than delete, so the fencing token keeps growing for the next holder.
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key(lease.name),
          ConditionExpression: '#holder = :holder AND #token = :token',
          UpdateExpression: [
            'SET #until = :zero',
            ...(now === undefined ? [] : ['#released = :now']),
            ...(markMs === undefined ? [] : ['#mark = :mark']),
          ].join(', '),
          ExpressionAttributeNames: {
            '#holder': 'holder',
            '#token': 'token',
            '#until': 'expiresAtMs',
            ...(now === undefined ? {} : { '#released': 'releasedAtMs' }),
            ...(markMs === undefined ? {} : { '#mark': 'markMs' }),
          },
          ExpressionAttributeValues: {
            ':holder': { S: lease.holder },
            ':token': { N: String(lease.token) },
            ':zero': { N: '0' },
            ...(now === undefined ? {} : { ':now': { N: String(now.getTime()) } }),
            ...(markMs === undefined ? {} : { ':mark': { N: String(markMs) } }),
          },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
}

function toLease(name: string, item: Record<string, { S?: string; N?: string }> | undefined): Lease {
  const holder = item?.['holder']?.S;
  const token = Number(item?.['token']?.N);
  const expiresAtMs = Number(item?.['expiresAtMs']?.N);
  if (!holder || !Number.isFinite(token) || !Number.isFinite(expiresAtMs)) {
    throw new ValidationError(
      `lease "${name}"`,
      'holder, token, expiresAtMs',
      `malformed item ${JSON.stringify(item)}`,
    );
  }
  return { name, holder, token, expiresAtMs };
}
