import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { makeKubeHttp } from '../../shared/adapters/kube/http.ts';
import { summaryChangesObjectKey } from '../../shared/apis/summary-changes.ts';
import { summaryObjectKey } from '../../shared/apis/summary-document.ts';
import { EnvVar } from '../../shared/runtime/env.ts';
import { type LogLevel, makeLogger } from '../../shared/runtime/logger.ts';
import { loadKubeAccess } from './kube-access.ts';
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
const clusterName = process.env[EnvVar.clusterName] ?? '';
const bucket = process.env[EnvVar.summaryBucket];
// An endpoint override (local runs, tests) serves S3 path-style.
const endpointOverride = process.env['AWS_ENDPOINT_URL_S3'] ?? process.env['AWS_ENDPOINT_URL'];
const s3 =
  bucket === undefined
    ? undefined
    : new S3Client({ maxAttempts: 5, forcePathStyle: endpointOverride !== undefined });
const shim = startShim({
  api: makeKubeHttp(loadKubeAccess(process.env)),
  sqs: new SQSClient({ maxAttempts: 5 }),
  queueUrl: process.env[EnvVar.podEventQueueUrl] ?? '',
  clusterName,
  logger,
  ...(s3 === undefined || bucket === undefined
    ? {}
    : {
        publishSummary: async (object, body, metadata) => {
          const out = await s3.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: object === 'base' ? summaryObjectKey(clusterName) : summaryChangesObjectKey(clusterName),
              Body: body,
              Metadata: { ...metadata },
              // Gzipped JSON, read as bytes: no Content-Encoding, so no client unpacks it on the way.
              ContentType: 'application/gzip',
            }),
          );
          return { etag: out.ETag };
        },
      }),
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
