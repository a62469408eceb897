import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';

// Golden files: set UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff.
const goldenDir = path.join(import.meta.dirname, '..', '..', 'fixtures', 'userdata');

/** Expects `actual` to equal the golden file `name` under test/fixtures/userdata. */
export function golden(name: string, actual: string): void {
  const file = path.join(goldenDir, name);
  if (process.env['UPDATE_GOLDEN'] === '1') fs.writeFileSync(file, actual);
  expect(fs.existsSync(file), `golden file ${file} is missing; run with UPDATE_GOLDEN=1 to create it`).toBe(
    true,
  );
  expect(actual).toBe(fs.readFileSync(file, 'utf8'));
}

/** The cluster the user data golden files join. */
export const GOLDEN_CLUSTER = {
  name: 'prod',
  endpoint: 'https://ABCDEF.gr7.us-east-1.eks.amazonaws.com',
  caBundle: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
  serviceCidr: '172.20.0.0/16',
} as const;
