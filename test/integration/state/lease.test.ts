import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoLeaseStore } from '../../../shared/adapters/aws/dynamo-lease.ts';
import { awsClientConfig, type Moto, moto, resetMoto } from '../../harness/index.ts';
import { createStateTable } from '../aws/cloud-fixture.ts';

const table = 'flotilla-state';
let server: Moto;
let store: DynamoLeaseStore;
const t0 = new Date('2026-05-01T12:00:00Z');
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

beforeAll(async () => {
  server = await moto();
});

beforeEach(async () => {
  await resetMoto(server);
  const dynamodb = new DynamoDBClient(awsClientConfig(server));
  await createStateTable(dynamodb, table);

  store = new DynamoLeaseStore(dynamodb, table);
});

describe('DynamoLeaseStore', () => {
  it('lets exactly one of ten concurrent invocations take the lease', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => store.acquire('provisioner', `invocation-${i}`, t0, 30)),
    );
    const winners = results.filter((lease) => lease !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ name: 'provisioner', token: 1, expiresAtMs: at(30).getTime() });
  });

  it('hands an expired lease to the next invocation with a new fencing token', async () => {
    const first = await store.acquire('provisioner', 'a', t0, 30);
    expect(first?.token).toBe(1);
    expect(await store.acquire('provisioner', 'b', at(29), 30)).toBeUndefined();
    const second = await store.acquire('provisioner', 'b', at(31), 30);
    expect(second).toMatchObject({ holder: 'b', token: 2 });
    if (!first || !second) throw new Error('unreachable');
    // The first holder has lost it: no renewal, and its fencing check fails.
    expect(await store.isHeld(first, at(32))).toBe(false);
    expect(await store.renew(first, at(32), 30)).toBeUndefined();
    expect(await store.isHeld(second, at(32))).toBe(true);
  });

  it('renews a held lease and reports it not held once it expires', async () => {
    const lease = await store.acquire('provisioner', 'a', t0, 30);
    if (!lease) throw new Error('no lease');
    const renewed = await store.renew(lease, at(20), 30);
    expect(renewed).toMatchObject({ token: 1, expiresAtMs: at(50).getTime() });
    if (!renewed) throw new Error('no renewal');
    expect(await store.isHeld(renewed, at(49))).toBe(true);
    expect(await store.isHeld(renewed, at(51))).toBe(false);
  });

  it('releases early so the next invocation need not wait, but never releases a lease it lost', async () => {
    const a = await store.acquire('provisioner', 'a', t0, 30);
    if (!a) throw new Error('no lease');
    await store.release(a);
    const b = await store.acquire('provisioner', 'b', at(1), 30);
    expect(b).toMatchObject({ holder: 'b', token: 2 });
    if (!b) throw new Error('no lease');
    await store.release(a);
    expect(await store.isHeld(b, at(2))).toBe(true);
  });

  it('keeps leases of different names apart', async () => {
    expect(await store.acquire('provisioner', 'a', t0, 30)).toBeDefined();
    expect(await store.acquire('disruption', 'b', t0, 30)).toBeDefined();
  });
});
