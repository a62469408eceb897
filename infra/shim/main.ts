import { SQSClient } from '@aws-sdk/client-sqs';
import { KubeConfig } from '@kubernetes/client-node';
import { EnvVar } from '../../shared/runtime/env.ts';
import { type LogLevel, makeLogger } from '../../shared/runtime/logger.ts';
import { startShim } from './shim.ts';

// The shim's process: configuration from the environment, credentials from the pod's service
// account (Kubernetes) and EKS Pod Identity (AWS, through the SDK's default chain).
const logger = makeLogger(
  { component: 'shim' },
  { level: (process.env[EnvVar.logLevel] as LogLevel | undefined) ?? 'info' },
);
const missing = [EnvVar.clusterName, EnvVar.podEventQueueUrl].filter((name) => !process.env[name]);
if (missing.length > 0) {
  logger.error('missing configuration', { missing });
  process.exit(2);
}
const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const shim = startShim({
  kubeConfig,
  sqs: new SQSClient({ maxAttempts: 5 }),
  queueUrl: process.env[EnvVar.podEventQueueUrl] ?? '',
  clusterName: process.env[EnvVar.clusterName] ?? '',
  logger,
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    shim.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error('shim stop failed', { error });
        process.exit(1);
      },
    );
  });
}
