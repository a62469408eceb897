import { describe, expect, it } from 'vitest';
import { expirationMethod } from '../../../../shared/usecases/disruption/method.ts';
import {
  COMMAND_METHODS,
  METHOD_NAMES,
  METHODS,
  recordedMethod,
  UnknownDisruptionMethodError,
} from '../../../../shared/usecases/disruption/methods.ts';
import { decodeCommand } from '../../../../shared/usecases/state/command-record.ts';

// The registry of voluntary disruption methods: the controller's order, the names every other list
// takes from it, each method's own budget reason and policy, and the method objects a command
// record's name resolves to.

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
      'schedule',
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
    ['schedule', 'Scheduled', 'first', 'keepValid', 'graceful'],
    ['emptiness', 'Empty', 'first', 'keepValid', 'graceful'],
    ['static-drift', 'Drifted', 'first', 'allValid', 'eventual'],
    ['drift', 'Drifted', 'first', 'allValid', 'eventual'],
    ['multi-node', 'Underutilized', 'mostSaving', 'simulateAgain', 'graceful'],
    ['repack', 'Underutilized', 'mostSaving', 'simulateAgain', 'graceful'],
    ['single-node', 'Underutilized', 'mostSaving', 'simulateAgain', 'graceful'],
  ])(
    '%s counts against the %s budget, picks %s, validates %s and is %s',
    (name, reason, pick, validation, disruptionClass) => {
      const method = METHODS.find((m) => m.name === name);
      expect(method).toMatchObject({ name, reason, disruptionClass, policy: { pick, validation } });
      // The methods with consolidation rules are those simulated again: consolidation's.
      expect(method?.consolidation !== undefined).toBe(validation === 'simulateAgain');
    },
  );

  it('lets a command record name every registered method and expiration, each resolved to its method', () => {
    expect(COMMAND_METHODS).toEqual([...METHOD_NAMES, expirationMethod.name]);
    for (const method of [...METHODS, expirationMethod]) {
      const decoded = decodeCommand(JSON.stringify(record(method.name)));
      expect(decoded).toMatchObject({ method: method.name });
      if ('problem' in decoded) return;
      expect(recordedMethod(decoded)).toBe(method);
    }
  });

  it('resolves a name no method has to an UnknownDisruptionMethodError that says what to do', () => {
    const decoded = decodeCommand(JSON.stringify(record('defragment')));
    expect(decoded).toMatchObject({ method: 'defragment' });
    if ('problem' in decoded) return;
    const resolved = recordedMethod(decoded);
    expect(resolved).toBeInstanceOf(UnknownDisruptionMethodError);
    expect(resolved).toMatchObject({
      code: 'UnknownDisruptionMethod',
      commandId: 'c1',
      method: 'defragment',
    });
    expect(resolved instanceof Error ? resolved.message : '').toMatch(
      /^disruption command c1 names method "defragment", which this version does not know .*: the command is left as it is/,
    );
  });

  it('gives expiration a forceful method of its own, outside the registry', () => {
    expect(expirationMethod).toEqual({ name: 'expiration', reason: 'Expired', disruptionClass: 'forceful' });
    expect(METHODS.map((m) => m.name)).not.toContain(expirationMethod.name);
  });
});
