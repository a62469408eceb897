import fs from 'node:fs';
import { markdown, type StepRow, TABLE_NOTES } from './report.ts';

// Prints the Markdown table of a saved run again: `npx tsx test/bench/scale/render.ts
// .cache/bench/scale-<timestamp>.json`.

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: npx tsx test/bench/scale/render.ts .cache/bench/scale-<timestamp>.json');
  process.exit(2);
}
const run = JSON.parse(fs.readFileSync(file, 'utf8')) as {
  startedAt: string;
  code?: { head?: string; changed?: string[]; at?: string };
  sizes: { size: string; steps: StepRow[]; error?: string }[];
};
console.log(
  [
    `# bench:scale ${run.startedAt}`,
    '',
    `Code: ${run.code?.head ?? '?'} with ${run.code?.changed?.length ?? 0} files changed, bundled at ${run.code?.at ?? '?'}.`,
    '',
    ...run.sizes.flatMap((s) => (s.error === undefined ? [] : [`- ${s.size} FAILED: ${s.error}`, ''])),
    markdown(run.sizes.flatMap((s) => s.steps)),
    '',
    ...TABLE_NOTES.map((n) => `- ${n}`),
  ].join('\n'),
);
