// One read of a published cluster summary in a fresh process, as a Lambda container's first read
// after its cold start does it (shared/adapters/aws/summary-source.ts, without S3): unzip on the
// thread pool, read the document, then convert what `what` asks for. Usage:
//   tsx test/bench/summary-read-case.ts <summary.json.gz> <nodeClaims|all>
// `nodeClaims`: the NodeClaims and the Nodes without their pods (a provisioner run with nothing
// pending); `all`: those, then the Nodes with their pods and the bound pods. The last stdout line is
// the JSON result (SummaryReadResult); the modules are loaded before the clock starts.
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { makeSummaryConversions, readSummaryDocument } from '../../shared/apis/index.ts';

export type SummaryReadWhat = 'nodeClaims' | 'all';

export interface SummaryReadResult {
  readonly what: SummaryReadWhat;
  readonly totalMs: number;
  /** Each phase in order: unzip, read (the head parsed), nodeClaims, nodeInfos, then pods (`all`). */
  readonly phasesMs: Readonly<Record<string, number>>;
  readonly counts: { readonly nodeClaims: number; readonly nodes: number; readonly pods: number };
}

const gunzipAsync = promisify(gunzip);

async function main(file: string, what: SummaryReadWhat): Promise<SummaryReadResult> {
  const body = readFileSync(file);
  const phasesMs: Record<string, number> = {};
  const started = performance.now();
  let last = started;
  const phase = (name: string) => {
    const now = performance.now();
    phasesMs[name] = now - last;
    last = now;
  };
  const unzipped = await gunzipAsync(body);
  phase('unzip');
  const summary = readSummaryDocument(unzipped, makeSummaryConversions());
  phase('read');
  const claims = summary.nodeClaims();
  phase('nodeClaims');
  const infos = summary.nodeInfos();
  phase('nodeInfos');
  let pods = 0;
  if (what === 'all') {
    summary.nodes();
    pods = summary.boundPods().items.length;
    phase('pods');
  }
  return {
    what,
    totalMs: last - started,
    phasesMs,
    counts: { nodeClaims: claims.items.length, nodes: infos.items.length, pods },
  };
}

const [file, what] = process.argv.slice(2);
if (file === undefined || (what !== 'nodeClaims' && what !== 'all')) {
  console.error('usage: tsx test/bench/summary-read-case.ts <summary.json.gz> <nodeClaims|all>');
  process.exit(2);
}
console.log(JSON.stringify(await main(file, what)));
