import type { PercentileSummary, ShadowComparison } from '../../usecases/shadow/compare.ts';

// `flotilla shadow report` as text: the two sides' cost over the window and per day at its rate,
// pod startup and decision wait, then the choices that make the difference, largest first.

const usd = (n: number) => `${n < 0 ? '-' : ''}$${Math.abs(n).toFixed(2)}`;
const signed = (n: number) => `${n >= 0 ? '+' : '-'}$${Math.abs(n).toFixed(2)}`;
const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
const time = (iso: string) => iso.replace(/:\d{2}\.\d{3}Z$/, 'Z').replace('T', ' ');

function spread(p: PercentileSummary, what: string): string {
  return p.count === 0 ? `none ${what}` : `p50 ${p.p50} s, p90 ${p.p90} s (${p.count} ${what})`;
}

/** The comparison as the report's text; `top` differences at most; `unreadable` shadow lines skipped. */
export function renderShadowComparison(
  c: ShadowComparison,
  options: { top?: number; unreadable?: number } = {},
): string {
  const perDay = (dollars: number) => (c.hours === 0 ? 0 : (dollars / c.hours) * 24);
  // Rounded as the dollars it is made of are, so it reads as the sum of the differences listed.
  const saved = Number((c.live.dollars - c.flotilla.dollars).toFixed(4));
  const rows: [string, string, string][] = [
    ['', 'live autoscaler', 'Flotilla (shadow)'],
    ['cost over the window', usd(c.live.dollars), usd(c.flotilla.dollars)],
    ['per hour', usd(c.live.averagePricePerHour), usd(c.flotilla.averagePricePerHour)],
    ['per day at this rate', usd(perDay(c.live.dollars)), usd(perDay(c.flotilla.dollars))],
    [
      'NodeClaims',
      `${c.live.nodeClaimsCreated} created, ${c.live.nodeClaimsDeleted} deleted`,
      `${plural(c.flotilla.launchesProposed, 'launch', 'launches')}, ${plural(c.flotilla.commandsProposed, 'disruption', 'disruptions')} proposed`,
    ],
  ];
  const width = [0, 1].map((i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
  const table = rows.map(([a, b, d]) =>
    `  ${a.padEnd(width[0] ?? 0)}  ${b.padEnd(width[1] ?? 0)}  ${d}`.trimEnd(),
  );
  const top = c.differences.slice(0, options.top ?? 10);
  const lines = [
    `Shadow report, ${time(c.from)} to ${time(c.to)} (${c.hours.toFixed(2)} h)`,
    '',
    ...table,
    '',
    `Flotilla would have ${saved >= 0 ? 'saved' : 'cost'} ${usd(Math.abs(saved))} over the window (${usd(Math.abs(perDay(saved)))} a day at this rate).`,
    `Pod startup, live: ${spread(c.live.podStartupSeconds, 'pods')}, creation to start.`,
    `Decision wait, Flotilla: ${spread(c.flotilla.decisionWaitSeconds, 'runs')}, the oldest pending pod's age when it decided a launch (node start not included).`,
    '',
    top.length === 0
      ? 'No difference: Flotilla would have done what the live autoscaler did.'
      : `Top differences (${top.length} of ${c.differences.length}; + is what Flotilla saves):`,
    ...top.map(
      (d) =>
        `  ${signed(d.dollars).padStart(9)}  ${d.kind.padEnd(15)}  ${d.nodePool}  ${time(d.from)} to ${time(d.until)}\n             ${d.why}`,
    ),
  ];
  if (c.unmatchedDeletions.length > 0) {
    lines.push(
      '',
      `Live deletions Flotilla proposed no command for (expiry, interruption, a user's delete, or a disruption it would not make; not priced): ${c.unmatchedDeletions
        .slice(0, 10)
        .map((d) => `${d.nodeClaim} at ${time(d.at)}`)
        .join(
          ', ',
        )}${c.unmatchedDeletions.length > 10 ? `, and ${c.unmatchedDeletions.length - 10} more` : ''}`,
    );
  }
  if ((options.unreadable ?? 0) > 0) {
    lines.push('', `${options.unreadable} shadow lines could not be read and were left out.`);
  }
  return `${lines.join('\n')}\n`;
}
