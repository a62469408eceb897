import fs from 'node:fs';
import path from 'node:path';
import { FlotillaError } from '../core/index.ts';
import { DECISION_LOG_FILE, renderHtmlReport } from './html-report.ts';
import type { SimulationRecord } from './record.ts';
import { renderSummary } from './summary.ts';

/** A decision in the record has no numeric `atMs`, so it cannot be placed in virtual time. */
export class DecisionLogError extends FlotillaError {
  readonly code = 'DecisionLogError';
}

/**
 * The decision log as JSON lines: one object per decision, in record order, each starting with
 * `time` (ISO 8601, virtual time) and `atMs`, then the decision's own fields. Ends with a
 * newline unless empty.
 * @throws DecisionLogError naming the decision whose `atMs` is missing or not a finite number.
 */
export function toJsonLines(record: SimulationRecord): string {
  const lines = record.decisions.map((decision, index) => {
    const atMs = decision['atMs'];
    if (typeof atMs !== 'number' || !Number.isFinite(atMs)) {
      throw new DecisionLogError(
        `decision ${index} (${JSON.stringify(decision['message'] ?? null)}) has atMs ${JSON.stringify(atMs ?? null)}; every decision needs its virtual time in epoch milliseconds`,
      );
    }
    return JSON.stringify({ time: new Date(atMs).toISOString(), atMs, ...decision });
  });
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** The files writeReports wrote. */
export interface ReportPaths {
  readonly summary: string;
  readonly html: string;
  readonly decisions: string;
}

/**
 * Writes `summary.txt`, `report.html` and `decisions.jsonl` into `outDir` (made if missing,
 * existing files replaced) and returns their paths.
 * @throws DecisionLogError (see toJsonLines); file system errors as Node raises them.
 */
export function writeReports(record: SimulationRecord, outDir: string): ReportPaths {
  // Render everything first, so a bad record leaves no half-written set of files.
  const summary = renderSummary(record);
  const html = renderHtmlReport(record);
  const decisions = toJsonLines(record);
  fs.mkdirSync(outDir, { recursive: true });
  const paths: ReportPaths = {
    summary: path.join(outDir, 'summary.txt'),
    html: path.join(outDir, 'report.html'),
    decisions: path.join(outDir, DECISION_LOG_FILE),
  };
  fs.writeFileSync(paths.summary, summary);
  fs.writeFileSync(paths.html, html);
  fs.writeFileSync(paths.decisions, decisions);
  return paths;
}
