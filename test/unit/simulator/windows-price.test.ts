import { describe, expect, it } from 'vitest';
import { simulate } from '../../../shared/simulator/engine.ts';
import { renderHtmlReport } from '../../../shared/simulator/html-report.ts';
import { WINDOWS_PRICE_NOTE } from '../../../shared/simulator/launch-table.ts';
import { parseScenario } from '../../../shared/simulator/scenario.ts';
import { renderSummary } from '../../../shared/simulator/summary.ts';
import { defaultPoolYaml } from './scenarios.ts';

// Windows nodes at their Linux price: the bundled catalog, as the AWS adapter's, holds no Windows
// license prices, so the simulator's reports mark those prices rather than show them as exact.

const scenario = (os: 'windows' | 'linux') => `name: ${os}
duration: 5m
bootDelay: 30s
${defaultPoolYaml(
  [
    `{ key: kubernetes.io/os, operator: In, values: [${os}] }`,
    '{ key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge] }',
    '{ key: karpenter.sh/capacity-type, operator: In, values: [on-demand] }',
  ],
  '',
  '',
  os === 'windows' ? 'windows2022@latest' : 'al2023@latest',
)}workloads:
  - kind: Deployment
    name: app
    replicas: 1
    template:
      metadata: { labels: { app: app } }
      spec:
        nodeSelector: { kubernetes.io/os: ${os} }
        containers:
          - name: c
            resources: { requests: { cpu: "1" } }
`;

describe('Windows prices in the simulator', () => {
  it('marks a Windows node launched at its Linux price in the summary and the HTML report', async () => {
    const record = await simulate(parseScenario(scenario('windows')));
    expect(record.launches).toHaveLength(1);
    expect(record.launches[0]).toMatchObject({ instanceType: 'm5.xlarge', priceWithoutWindowsLicense: true });
    const summary = renderSummary(record);
    expect(summary).toMatch(/m5\.xlarge .*\$0\.\d+ ‡/);
    expect(summary).toContain(WINDOWS_PRICE_NOTE);
    expect(renderHtmlReport(record)).toContain('‡ Linux price');
  });

  it('leaves a Linux node unmarked', async () => {
    const record = await simulate(parseScenario(scenario('linux')));
    expect(record.launches[0]?.priceWithoutWindowsLicense).toBeUndefined();
    expect(renderSummary(record)).not.toContain('‡');
  });
});
