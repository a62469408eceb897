import { describe, expect, it } from 'vitest';
import {
  instanceLookupUntilMs,
  LAUNCH_ANNOTATION,
  launchAnnotation,
  readLaunchRecord,
} from '../../../../shared/usecases/state/launch-record.ts';

const T0 = Date.parse('2026-11-21T10:00:00Z');
const WINDOW = 90_000;

describe('the launch record annotation', () => {
  it('round-trips the record and the time of the last send', () => {
    const value = launchAnnotation({ decidedAtMs: T0, request: 'H4sI-opaque' }, T0 + 60_000);
    expect(readLaunchRecord({ annotations: { [LAUNCH_ANNOTATION]: value } })).toEqual({
      kind: 'recorded',
      record: { decidedAtMs: T0, request: 'H4sI-opaque' },
      sentAtMs: T0 + 60_000,
    });
  });

  it('the lookup window runs from the last send, so a replay much later is looked for again', () => {
    const annotations = {
      [LAUNCH_ANNOTATION]: launchAnnotation({ decidedAtMs: T0, request: 'x' }, T0 + 300_000),
    };
    expect(instanceLookupUntilMs({ annotations, createdAtMs: T0 }, WINDOW)).toBe(T0 + 300_000 + WINDOW);
  });

  it('no record: no launch was ever sent, nothing to look for', () => {
    expect(readLaunchRecord({ annotations: {} })).toEqual({ kind: 'none' });
    expect(instanceLookupUntilMs({ annotations: {}, createdAtMs: T0 }, WINDOW)).toBeUndefined();
  });

  it('an unreadable record counts as a launch that may have been sent', () => {
    for (const bad of [
      'not json',
      '{}',
      '{"decidedAt":"yesterday","request":"x"}',
      '{"decidedAt":"2026-11-21T10:00:00Z"}',
    ]) {
      const annotations = { [LAUNCH_ANNOTATION]: bad };
      expect(readLaunchRecord({ annotations }).kind).toBe('malformed');
      expect(instanceLookupUntilMs({ annotations, createdAtMs: T0 }, WINDOW)).toBe(T0 + WINDOW);
    }
  });
});
