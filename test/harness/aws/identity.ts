import { AsyncLocalStorage } from 'node:async_hooks';
import { FLOTILLA_FUNCTIONS } from '../../../infra/functions.ts';
import { SHADOW_FUNCTIONS } from '../../../infra/stack-mode.ts';
import { awsClientConfig, type Moto } from '../moto.ts';

// Who makes an AWS call in a test. Flotilla's Lambdas each run with their own role; in the harness
// each gets its own access key (moto accepts any), and the IAM check (iam-check.ts) evaluates every
// call made with one against that Lambda's policy from the synthesized stack. Set-up that plays a
// user or EC2 keeps the account's own `testing` key and is not checked.

/**
 * Who runs with a role of the stack: a Lambda, by its FLOTILLA_FUNCTIONS row name, or `shim`, the
 * in-cluster shim's Pod Identity role.
 */
export type LambdaName = (typeof FLOTILLA_FUNCTIONS)[number]['name'] | 'shim' | ShadowName;

/** A role of the shadow stack (`mode: 'shadow'`): `shadow-<Lambda>`, or `shadow-shim`. */
export type ShadowName = `shadow-${(typeof SHADOW_FUNCTIONS)[number] | 'shim'}`;

/** The shadow stack's role of `name` (one of SHADOW_FUNCTIONS, or `shim`). */
export const shadowRole = (name: string): ShadowName => `shadow-${name}` as ShadowName;

const IDENTITIES: readonly string[] = [
  ...FLOTILLA_FUNCTIONS.map((f) => f.name),
  'shim',
  ...[...SHADOW_FUNCTIONS, 'shim'].map(shadowRole),
];

const PREFIX = 'AKIAFLOTILLA';

/**
 * The Lambda an invocation runs as, for handlers imported into the test process: several run at
 * once there, and an SDK client keeps the credentials it first found in the process environment,
 * so the invocation's context names the role rather than the key (see asLambda).
 */
export const lambdaInvocation = new AsyncLocalStorage<LambdaName>();

/** The access key of a Lambda's role in tests. */
export function lambdaCredentials(lambda: LambdaName): { accessKeyId: string; secretAccessKey: string } {
  if (!IDENTITIES.includes(lambda))
    throw new Error(`no Lambda "${lambda}" in FLOTILLA_FUNCTIONS or the shadow stack`);
  return { accessKeyId: `${PREFIX}${lambda.toUpperCase().replaceAll('-', '')}`, secretAccessKey: 'flotilla' };
}

/** The Lambda an access key belongs to, or undefined for anyone else (test set-up). */
export function lambdaOfAccessKey(accessKeyId: string): LambdaName | undefined {
  if (!accessKeyId.startsWith(PREFIX)) return undefined;
  const suffix = accessKeyId.slice(PREFIX.length);
  return IDENTITIES.find((name) => name.toUpperCase().replaceAll('-', '') === suffix);
}

/** SDK client settings for moto with the credentials of `lambda`'s role. */
export function awsConfigAs(server: Moto, lambda: LambdaName) {
  return { ...awsClientConfig(server), credentials: lambdaCredentials(lambda) };
}

/** The process environment a Lambda's handler finds for AWS: moto's endpoint and its role's keys. */
export function lambdaAwsEnv(server: Moto, lambda: LambdaName): Record<string, string> {
  const credentials = lambdaCredentials(lambda);
  return {
    AWS_REGION: server.region,
    AWS_ENDPOINT_URL: server.endpoint,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
  };
}
