import { describe, expect, it } from 'vitest';
import {
  COMMAND_METHODS,
  isConsolidationCommand,
  METHOD_NAMES,
  METHODS,
  methodNamed,
} from '../../../../shared/usecases/disruption/methods.ts';
import { decodeCommand } from '../../../../shared/usecases/state/command-record.ts';

// The registry of voluntary disruption methods: the controller's order, the names every other list
// takes from it, and each method's own budget reason and policy.

const record = (method: string) => ({
  id: 'c1',
  method,
  reason: 'Empty',
  candidates: ['a'],
  replacements: [],
  startedAt: '2026-01-01T00:00:00.000Z',
});

describe('disruption method registry', () => {
  it("orders the methods by their own order, Karpenter's with repack before single-node", () => {
    expect(METHOD_NAMES).toEqual([
      'emptiness',
      'static-drift',
      'drift',
      'multi-node',
      'repack',
      'single-node',
    ]);
    const orders = METHODS.map((m) => m.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
    expect(new Set(orders).size).toBe(orders.length);
  });

  it.each([
    ['emptiness', 'Empty', 'first', 'keepValid'],
    ['static-drift', 'Drifted', 'first', 'allValid'],
    ['drift', 'Drifted', 'first', 'allValid'],
    ['multi-node', 'Underutilized', 'mostSaving', 'simulateAgain'],
    ['repack', 'Underutilized', 'mostSaving', 'simulateAgain'],
    ['single-node', 'Underutilized', 'mostSaving', 'simulateAgain'],
  ])('%s counts against the %s budget, picks %s and validates %s', (name, reason, pick, validation) => {
    expect(methodNamed(name)).toMatchObject({ name, reason, policy: { pick, validation } });
    expect(isConsolidationCommand(name)).toBe(validation === 'simulateAgain');
  });

  it('lets a command record name every registered method and expiration, and nothing else', () => {
    expect(COMMAND_METHODS).toEqual([...METHOD_NAMES, 'expiration']);
    for (const method of COMMAND_METHODS) {
      expect(decodeCommand(JSON.stringify(record(method)))).toMatchObject({ method });
    }
    expect(decodeCommand(JSON.stringify(record('defragment')))).toHaveProperty('problem');
  });

  it('takes an expiration record for no consolidation command', () => {
    expect(isConsolidationCommand('expiration')).toBe(false);
  });
});
