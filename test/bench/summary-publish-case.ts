// The shim's publishing of a cluster summary in a fresh process: the summary of the scale bench's
// cluster built with the shim's own SummaryBuilder, then its document gzipped as the shim publishes
// it (infra/shim/summary.ts) PUBLISHES times, one after another as the shim does. Usage:
//   tsx test/bench/summary-publish-case.ts <nodes>x<pods>
// The last stdout line is the JSON result (SummaryPublishResult). Memory is the process's resident
// set, sampled every 5 ms: after the build (garbage collected first, when `--expose-gc` is given),
// and its peak over the publishes, which is what a publish costs the shim's memory limit.
import { gzipSummary } from '../../infra/shim/summary-publish.ts';
import { nodeShapes, parseSizes, planCluster } from './scale/plan.ts';
import { buildSummary } from './summary-build.ts';
import { loadInstanceTypes } from './workloads.ts';

export interface SummaryPublishResult {
  readonly size: string;
  /** Each publish's time, in order. */
  readonly publishMs: readonly number[];
  readonly gzippedBytes: number;
  readonly rssAfterBuildBytes: number;
  readonly peakRssBytes: number;
}

const PUBLISHES = 5;
const AT = '2026-11-26T12:00:00Z';

async function main(sizeArg: string): Promise<SummaryPublishResult> {
  const size = parseSizes(sizeArg)[0];
  if (size === undefined) throw new Error(`no size in ${JSON.stringify(sizeArg)}`);
  const types = new Map(loadInstanceTypes('catalog').map((t) => [t.name, t]));
  const builder = buildSummary(planCluster(size, nodeShapes(types), 1), types, 1);
  (globalThis as { gc?: () => void }).gc?.();
  const rssAfterBuildBytes = process.memoryUsage().rss;
  let peakRssBytes = rssAfterBuildBytes;
  const sampler = setInterval(() => {
    peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
  }, 5);
  const publishMs: number[] = [];
  let gzippedBytes = 0;
  try {
    for (let i = 0; i < PUBLISHES; i++) {
      const started = performance.now();
      const body = await gzipSummary(builder.document(AT, { pods: AT, nodes: AT, nodeClaims: AT }));
      publishMs.push(performance.now() - started);
      gzippedBytes = body.length;
      peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
    }
  } finally {
    clearInterval(sampler);
  }
  return { size: sizeArg, publishMs, gzippedBytes, rssAfterBuildBytes, peakRssBytes };
}

const [sizeArg] = process.argv.slice(2);
if (sizeArg === undefined) {
  console.error('usage: summary-publish-case.ts <nodes>x<pods>');
  process.exit(2);
}
console.log(JSON.stringify(await main(sizeArg)));
