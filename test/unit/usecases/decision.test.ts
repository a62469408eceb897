import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../shared/runtime/logger.ts';
import {
  DECISION_MESSAGES,
  type Decision,
  observeDecisions,
  toDecisionLine,
  writeDecision,
} from '../../../shared/usecases/decisions/decision.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger(
    { component: 'test' },
    {
      level: 'debug',
      sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
      now: () => new Date('2026-01-02T03:04:05.000Z'),
    },
  );
  return { logger, lines };
}

const pods = (n: number) => Array.from({ length: n }, (_, i) => ({ namespace: 'default', name: `web-${i}` }));

const launch: Decision = {
  kind: 'launch',
  reason: 'provisioning',
  outcome: 'launched',
  nodePool: 'default',
  nodeClaim: 'default-abc',
  pods: pods(12),
  instanceTypes: Array.from({ length: 15 }, (_, i) => `m5.${i}xlarge`),
  capacityType: 'spot',
  round: 0,
  leaseToken: 7,
  instanceId: 'i-1',
  instanceType: 'm5.0xlarge',
  zone: 'us-east-1a',
  pricePerHour: 0.096,
};

describe('decision lines', () => {
  it('gives every kind its own message', () => {
    const messages = Object.values(DECISION_MESSAGES);
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('writes decision and reason first, pod and instance-type counts with bounded samples', () => {
    const line = toDecisionLine(launch);
    expect(line.level).toBe('info');
    expect(line.message).toBe('launch decided');
    expect(Object.keys(line.fields).slice(0, 2)).toEqual(['decision', 'reason']);
    expect(line.fields).toMatchObject({
      decision: 'launch',
      reason: 'provisioning',
      podCount: 12,
      instanceTypeCount: 15,
      pricePerHour: 0.096,
    });
    expect(line.fields['pods']).toEqual(pods(10).map((p) => `default/${p.name}`));
    expect(line.fields['instanceTypes']).toHaveLength(10);
    expect(line.fields).not.toHaveProperty('kind');
  });

  it('leaves undefined keys out and writes a rejected NodePool as a warning', () => {
    const line = toDecisionLine({ kind: 'rejectNodePool', reason: 'spec.limits: bad', nodePool: 'x' });
    expect(line).toEqual({
      level: 'warn',
      message: 'nodepool failed validation',
      fields: { decision: 'rejectNodePool', reason: 'spec.limits: bad', nodePool: 'x' },
    });
    const skip = toDecisionLine({ kind: 'skip', reason: 'lease held', lease: 'provisioner' });
    expect(Object.keys(skip.fields)).toEqual(['decision', 'reason', 'lease']);
  });
});

describe('writeDecision', () => {
  it('writes one JSON line through the logger', () => {
    const { logger, lines } = capture();
    writeDecision(logger.child({ holder: 'h-1' }), launch);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      message: 'launch decided',
      component: 'test',
      holder: 'h-1',
      decision: 'launch',
      outcome: 'launched',
      podCount: 12,
    });
  });

  it('hands decisions to an observer with the fields child loggers add, and still writes the line', () => {
    const { logger, lines } = capture();
    const seen: { decision: Decision; context: Record<string, unknown> }[] = [];
    const observed = observeDecisions(logger, (decision, context) => seen.push({ decision, context }));
    const skip: Decision = { kind: 'skip', reason: 'no provisionable pods', leaseToken: 1 };
    writeDecision(observed.child({ holder: 'h-2' }), launch);
    writeDecision(observed, skip);
    observed.warn('not a decision');
    expect(seen).toEqual([
      { decision: launch, context: { holder: 'h-2' } },
      { decision: skip, context: {} },
    ]);
    expect(lines.map((l) => l['message'])).toEqual([
      'launch decided',
      'provisioning skipped',
      'not a decision',
    ]);
    expect(lines[0]?.['holder']).toBe('h-2');
  });

  it('a logger that is not observed only writes', () => {
    const { logger, lines } = capture();
    const observed = observeDecisions(logger, () => {
      throw new Error('not this logger');
    });
    writeDecision(logger, launch);
    expect(observed).not.toBe(logger);
    expect(lines).toHaveLength(1);
  });
});
