import type { SimulationRecord } from './record.ts';

// A plain-text summary of one simulation run, for the terminal.

/** Minutes and seconds of a virtual offset, e.g. `12m30s`. */
export function formatOffset(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  if (m === 0) return `${s}s`;
  return s === 0 ? `${m}m` : `${m}m${s}s`;
}

/** The value at quantile `q` (0–1) of `values`, nearest rank; undefined when empty. */
export function percentile(values: readonly number[], q: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1];
}

const dollars = (v: number) => `$${v.toFixed(2)}/h`;

/** What happened in a run: nodes launched, cost over time, pod waits, interruptions, leftovers. */
export function formatBasicSummary(record: SimulationRecord): string {
  const lines: string[] = [];
  const sc = record.scenario;
  lines.push(`Scenario ${sc.name} (${formatOffset(sc.durationMs)} in ${sc.region})`);
  if (sc.description !== undefined) lines.push(`  ${sc.description}`);

  lines.push('', `Nodes launched: ${record.launches.length}`);
  const byType = new Map<string, number>();
  for (const l of record.launches) {
    const key = `${l.instanceType}\t${l.capacityType}`;
    byType.set(key, (byType.get(key) ?? 0) + 1);
  }
  for (const [key, count] of [...byType].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
    const [type = '', capacity = ''] = key.split('\t');
    lines.push(`  ${type.padEnd(16)} ${capacity.padEnd(10)} ${String(count).padStart(4)}`);
  }
  if (record.terminations.length > 0) {
    const reasons = new Map<string, number>();
    for (const t of record.terminations) reasons.set(t.reason, (reasons.get(t.reason) ?? 0) + 1);
    lines.push(
      `Nodes terminated: ${record.terminations.length} (${[...reasons].map(([r, n]) => `${n} ${r}`).join(', ')})`,
    );
  }

  const costs = record.samples.map((s) => s.costPerHour);
  if (costs.length > 0) {
    const peak = record.samples.reduce((a, b) => (b.costPerHour > a.costPerHour ? b : a));
    const average = costs.reduce((a, b) => a + b, 0) / costs.length;
    lines.push(
      '',
      `Cost: ${dollars(costs[costs.length - 1] ?? 0)} at the end, peak ${dollars(peak.costPerHour)} at ${formatOffset(peak.atMs - sc.startMs)}, average ${dollars(average)} (about $${((average * sc.durationMs) / 3_600_000).toFixed(2)} for the run)`,
    );
    const step = Math.max(1, Math.ceil(record.samples.length / 8));
    for (let i = 0; i < record.samples.length; i += step) {
      const s = record.samples[i];
      if (s === undefined) continue;
      lines.push(
        `  ${formatOffset(s.atMs - sc.startMs).padStart(7)}  ${String(s.nodes).padStart(3)} nodes  ${dollars(s.costPerHour).padStart(9)}  ${String(s.pendingPods).padStart(4)} pending  ${String(s.runningPods).padStart(4)} running`,
      );
    }
  }

  const p50 = percentile(record.podWaitsMs, 0.5);
  const p95 = percentile(record.podWaitsMs, 0.95);
  lines.push(
    '',
    p50 === undefined || p95 === undefined
      ? 'Pod wait: no pod got a node'
      : `Pod wait: ${record.podWaitsMs.length} pods got a node; p50 ${formatOffset(p50)}, p95 ${formatOffset(p95)}`,
  );
  const handled = record.interruptions.filter((i) => i.handled).length;
  lines.push(`Interruptions: ${record.interruptions.length} (${handled} handled)`);
  if (record.unschedulable.length === 0) {
    lines.push('Pods left unschedulable: none');
  } else {
    lines.push(`Pods left unschedulable: ${record.unschedulable.length}`);
    for (const u of record.unschedulable.slice(0, 10)) {
      lines.push(`  ${u.namespace}/${u.name}: ${u.reasons.join('; ')}`);
    }
    if (record.unschedulable.length > 10) lines.push(`  … and ${record.unschedulable.length - 10} more`);
  }
  lines.push(`Decisions logged: ${record.decisions.length}`);
  return `${lines.join('\n')}\n`;
}
