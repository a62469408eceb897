import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@smithy/core/client';
import { afterAll, afterEach, expect } from 'vitest';
import { authorizationsOf, denial } from './aws/authorize.ts';
import { lambdaInvocation, lambdaOfAccessKey } from './aws/identity.ts';
import { stackPolicies } from './aws/policies.ts';
import { STACK_ACCOUNT } from './aws/stack.ts';
import { moto } from './moto.ts';
import { runDir } from './services.ts';

// Setup file of the harness tests: every AWS call made with a Flotilla Lambda's credentials, or
// within one of its handler's invocations (see aws/identity.ts), is checked against that Lambda's policy from the synthesized stack before it is
// sent, as AWS would check it (moto does not). A call the policy denies fails the way AWS fails it
// (UnauthorizedOperation for EC2, AccessDenied elsewhere), and the test that made it fails even if
// the code under test handled the error.

interface Denied {
  readonly lambda: string;
  readonly call: string;
  readonly why: string;
}

const denied: Denied[] = [];
/** `lambda action` of every authorization granted in this file, for the run's usage report. */
const used = new Set<string>();

type Send = (this: Client<never, never, never, never>, command: never, ...rest: never[]) => Promise<unknown>;
/**
 * The SDK's own send, kept where a later run of this file finds it: a harness worker runs several
 * files in one process (isolate: false), and each file's run replaces the check before it rather
 * than wrapping it.
 */
const ORIGINAL_SEND = Symbol.for('flotilla.iam-check.original-send');
const prototype = Client.prototype as unknown as { send: Send; [ORIGINAL_SEND]?: Send };
prototype[ORIGINAL_SEND] ??= prototype.send;
const send = prototype[ORIGINAL_SEND];

async function accessKeyOf(client: { config: Record<string, unknown> }): Promise<string | undefined> {
  const credentials = client.config['credentials'];
  const resolved = typeof credentials === 'function' ? await credentials() : credentials;
  return (resolved as { accessKeyId?: string } | undefined)?.accessKeyId;
}

/** moto's endpoint, where the check reads resource tags as they stand. */
async function motoEndpoint(): Promise<string> {
  return (await moto()).endpoint;
}

/** An error shaped as the SDK raises AWS's own refusal. */
function accessDenied(service: string, message: string): Error {
  const code = service === 'ec2' ? 'UnauthorizedOperation' : 'AccessDeniedException';
  const error = new Error(message) as Error & { $fault: string; $metadata: { httpStatusCode: number } };
  error.name = code;
  error.$fault = 'client';
  error.$metadata = { httpStatusCode: 403 };
  return error;
}

prototype.send = async function checkedSend(command, ...rest) {
  const client = this as unknown as { config: Record<string, unknown> };
  const lambda = lambdaInvocation.getStore() ?? lambdaOfAccessKey((await accessKeyOf(client)) ?? '');
  if (lambda !== undefined) {
    const service = String(client.config['serviceId'] ?? '');
    const operation = (command as { constructor: { name: string } }).constructor.name.replace(/Command$/, '');
    const regionOf = client.config['region'];
    const region = String(typeof regionOf === 'function' ? await regionOf() : regionOf);
    const endpoint = await motoEndpoint();
    // The check's own reads of resource tags are the account's, not the invocation's.
    const requests = await lambdaInvocation.exit(() =>
      authorizationsOf({
        service,
        operation,
        input: ((command as { input?: unknown }).input ?? {}) as Record<string, unknown>,
        region,
        endpoint,
      }),
    );
    const policies = (await stackPolicies())[lambda] ?? [];
    const principal = `arn:aws:iam::${STACK_ACCOUNT}:role/flotilla-${lambda}`;
    for (const request of requests) {
      const why = await denial(principal, policies, request);
      if (why === undefined) {
        used.add(`${lambda} ${request.action}`);
        continue;
      }
      const call = `${service.toLowerCase()}:${operation}`;
      denied.push({ lambda, call, why });
      throw accessDenied(
        service.toLowerCase(),
        `the ${lambda} Lambda's role may not call ${call}: ${why} (IAM check of the synthesized stack)`,
      );
    }
  }
  return send.call(this, command, ...rest);
};

/**
 * Takes the refusals recorded so far, for a test whose subject is the refusal itself (the IAM
 * check's own tests); every other test fails when one is left at its end.
 */
export function takeDenials(): readonly Denied[] {
  return denied.splice(0);
}

afterEach(() => {
  const found = denied.splice(0);
  expect(found, 'AWS calls the Lambda roles of the synthesized stack would deny').toEqual([]);
});

// What each role was seen to use, appended to the run folder; the global teardown sums it up in
// .cache/test-results/iam-used.json, to hold against the policies.
afterAll(() => {
  if (used.size === 0) return;
  fs.appendFileSync(path.join(runDir(), 'iam-used.txt'), `${[...used].join('\n')}\n`);
});
