// The CDK app (`cdk.json` runs it with tsx): `npx cdk deploy -c clusterName=<name>`.

import { FlotillaConfigError } from './flotilla-cluster.ts';
import { AppUsageError, synthApp } from './main.ts';

try {
  synthApp();
} catch (error) {
  if (!(error instanceof AppUsageError || error instanceof FlotillaConfigError)) throw error;
  process.stderr.write(`flotilla: ${error.message}\n`);
  process.exitCode = 1;
}
