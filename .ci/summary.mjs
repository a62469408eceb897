// Prints vitest's JSON report as the plain summary line CI reads: "N passed, N failed".
import fs from 'node:fs';

const file = process.argv[2];
if (!file || !fs.existsSync(file)) {
  console.log('summary: no vitest report (the type check or lint failed before tests ran)');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const report = JSON.parse(fs.readFileSync(file, 'utf8'));
const passed = report.numPassedTests ?? 0;
// A file that failed without a failed test (an import error, a failing hook) counts as one failure.
const brokenFiles = (report.testResults ?? []).filter(
  (file) =>
    file.status === 'failed' && !(file.assertionResults ?? []).some((test) => test.status === 'failed'),
).length;
const failed = (report.numFailedTests ?? 0) + brokenFiles;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
