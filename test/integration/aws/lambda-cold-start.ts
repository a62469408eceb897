import { EnvVar } from '../../../shared/runtime/env.ts';
import { type LambdaName, lambdaAwsEnv, lambdaInvocation } from '../../harness/aws/identity.ts';
import { type DeployedStack, deployStack, STACK_CLUSTER, STACK_NAMES } from '../../harness/aws/stack.ts';
import type { Moto } from '../../harness/index.ts';

// What a Lambda of the stack finds at cold start, on moto and the harness's API server: the stack
// deployed (its EKS cluster, state table, summary bucket and queues), and the process environment
// the stack sets, with the Lambda's own role and the controller group's kubeconfig.

/**
 * Deploys the stack on moto (EKS cluster included) and sets the environment the stack gives its
 * Lambdas: the API server through `controllerKubeconfigPath`, the cluster, table, summary bucket and
 * queues, and `extra`. moto's endpoint (`AWS_ENDPOINT_URL`) is an IP address, so the Lambdas' S3
 * clients address the bucket by path, as moto's one endpoint for every service needs.
 * The AWS identity is set per Lambda by `asLambda`.
 */
export async function prepareColdStart(
  server: Moto,
  controllerKubeconfigPath: string,
  extra: Record<string, string> = {},
): Promise<DeployedStack> {
  const stack = await deployStack(server, { eksCluster: true });
  Object.assign(process.env, {
    AWS_REGION: server.region,
    AWS_ENDPOINT_URL: server.endpoint,
    KUBECONFIG: controllerKubeconfigPath,
    [EnvVar.clusterName]: STACK_CLUSTER,
    [EnvVar.stateTable]: STACK_NAMES.stateTable,
    [EnvVar.summaryBucket]: STACK_NAMES.summaryBucket,
    [EnvVar.podEventQueueUrl]: stack.queueUrls.podEvents,
    [EnvVar.terminationQueueUrl]: stack.queueUrls.termination,
    [EnvVar.disruptionQueueUrl]: stack.queueUrls.disruptionPasses,
    [EnvVar.decisionBus]: STACK_NAMES.decisionBus,
    ...extra,
  });
  return stack;
}

/**
 * Runs `work` (a handler's import or one invocation) as `lambda`'s invocation: the IAM check holds
 * every AWS call made within it to that Lambda's policy, however the invocations of several
 * handlers interleave, and the process environment has that Lambda's role and function name while
 * `work` starts (a handler reads its name at import).
 */
export async function asLambda<T>(server: Moto, lambda: LambdaName, work: () => Promise<T>): Promise<T> {
  Object.assign(process.env, lambdaAwsEnv(server, lambda), {
    AWS_LAMBDA_FUNCTION_NAME: `flotilla-${lambda}`,
  });
  return lambdaInvocation.run(lambda, work);
}

/** Runs `load` (a handler module's import, whose cold start logs) with stdout going to `lines`. */
export async function capturingStdout<T>(lines: string[], load: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    return await load();
  } finally {
    process.stdout.write = write;
  }
}
