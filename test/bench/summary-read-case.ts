// One read of a published cluster summary in a fresh process, as a Lambda container's first read
// after its cold start does it (shared/adapters/aws/summary-source.ts, without S3): unzip on the
// thread pool, read the document, then convert what `what` asks for. Usage:
//   tsx test/bench/summary-read-case.ts <summary.json.gz> <nodeClaims|all|changes> [changes.json.gz]
// `nodeClaims`: the NodeClaims and the Nodes without their pods (a provisioner run with nothing
// pending); `all`: those, then the Nodes with their pods and the bound pods. `changes`: a warm
// container's read of the changes since the document (summary-changes.ts), the document read whole
// (`all`) before the clock starts, then everything read again with the changes applied. The last
// stdout line is the JSON result (SummaryReadResult); the modules are loaded before the clock starts.
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import {
  parseSummaryDocument,
  parseSummaryJson,
  type SummaryParts,
  summaryFromParts,
} from '../../shared/apis/cluster-summary.ts';
import { makeSummaryConversions } from '../../shared/apis/index.ts';
import { applySummaryChanges, parseSummaryChanges } from '../../shared/apis/summary-apply.ts';

export type SummaryReadWhat = 'nodeClaims' | 'all' | 'changes';

export interface SummaryReadResult {
  readonly what: SummaryReadWhat;
  readonly totalMs: number;
  /**
   * Each phase in order: unzip, read (the head parsed; for `changes`, the changes parsed and
   * applied), nodeClaims, nodeInfos, then pods (`all`, `changes`).
   */
  readonly phasesMs: Readonly<Record<string, number>>;
  readonly counts: { readonly nodeClaims: number; readonly nodes: number; readonly pods: number };
}

const gunzipAsync = promisify(gunzip);

async function main(file: string, what: SummaryReadWhat, changesFile?: string): Promise<SummaryReadResult> {
  const conversions = makeSummaryConversions();
  let base: SummaryParts | undefined;
  if (what === 'changes') {
    // The warm container: the base read whole, as its last run did.
    base = parseSummaryDocument(await gunzipAsync(readFileSync(file)));
    const warm = summaryFromParts(base, conversions);
    warm.nodeClaims();
    warm.nodes();
    warm.boundPods();
  }
  const body = readFileSync(what === 'changes' ? (changesFile ?? '') : file);
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
  const summary = summaryFromParts(
    base === undefined
      ? parseSummaryDocument(unzipped)
      : applySummaryChanges(
          base,
          parseSummaryChanges(parseSummaryJson(unzipped.toString('utf8'), '(changes)')),
        ),
    conversions,
  );
  phase('read');
  const claims = summary.nodeClaims();
  phase('nodeClaims');
  const infos = summary.nodeInfos();
  phase('nodeInfos');
  let pods = 0;
  if (what !== 'nodeClaims') {
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

const [file, what, changesFile] = process.argv.slice(2);
if (
  file === undefined ||
  (what !== 'nodeClaims' && what !== 'all' && what !== 'changes') ||
  (what === 'changes' && changesFile === undefined)
) {
  console.error(
    'usage: tsx test/bench/summary-read-case.ts <summary.json.gz> <nodeClaims|all|changes> [changes.json.gz]',
  );
  process.exit(2);
}
console.log(JSON.stringify(await main(file, what, changesFile)));
