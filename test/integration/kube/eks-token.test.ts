import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { eksTokenLifetimeSeconds, makeEksToken } from '../../../shared/adapters/kube/eks-token.ts';
import { harnessPython } from '../../harness/index.ts';

function decode(token: string): URL {
  expect(token.startsWith('k8s-aws-v1.')).toBe(true);
  return new URL(Buffer.from(token.slice('k8s-aws-v1.'.length), 'base64url').toString('utf8'));
}

describe('makeEksToken', () => {
  it('is byte for byte the token botocore makes for `aws eks get-token`', async () => {
    const when = '2026-03-04T05:06:07Z';
    const credentials = {
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    };
    const ours = await makeEksToken({
      clusterName: 'prod-eu',
      region: 'eu-west-1',
      credentials,
      now: new Date(when),
    });
    const script = path.join(import.meta.dirname, 'fixtures', 'eks_token.py');
    const botocore = execFileSync(
      await harnessPython(),
      [script, 'prod-eu', 'eu-west-1', credentials.accessKeyId, credentials.secretAccessKey, when],
      { encoding: 'utf8' },
    ).trim();
    expect(ours).toBe(botocore);
    const url = decode(ours);
    expect(url.host).toBe('sts.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('Action')).toBe('GetCallerIdentity');
    expect(url.searchParams.get('X-Amz-Expires')).toBe(String(eksTokenLifetimeSeconds));
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toEqual(['host', 'x-k8s-aws-id']);
  });

  it('is deterministic for the same credentials and time, and differs per cluster', async () => {
    const base = {
      region: 'eu-west-1',
      credentials: {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      },
      now: new Date('2026-03-04T05:06:07Z'),
    };
    const a = await makeEksToken({ ...base, clusterName: 'a' });
    expect(await makeEksToken({ ...base, clusterName: 'a' })).toBe(a);
    expect(await makeEksToken({ ...base, clusterName: 'b' })).not.toBe(a);
    const url = decode(a);
    expect(url.host).toBe('sts.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20260304T050607Z');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });
});
