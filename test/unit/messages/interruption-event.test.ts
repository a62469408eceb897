import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseInterruptionEvent } from '../../../shared/messages/interruption-event.ts';

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/events/${name}.json`, import.meta.url), 'utf8');
const withDetail = (name: string, patch: Record<string, unknown>) => {
  const event = JSON.parse(fixture(name)) as { detail: Record<string, unknown> };
  return JSON.stringify({ ...event, detail: { ...event.detail, ...patch } });
};
const ID = 'i-0b662ef9931388ba0';

describe('parseInterruptionEvent', () => {
  it.each([
    ['spot-interruption', 'spotInterruption', [ID]],
    ['rebalance', 'rebalanceRecommendation', [ID]],
    ['state-change-stopping', 'instanceStopped', [ID]],
    ['health-scheduled-change', 'scheduledChange', [ID, 'i-0c771ef9931388bb1']],
    ['capacity-reservation-interruption', 'capacityReservationInterruption', [ID]],
  ])('%s → %s', (name, kind, instanceIds) => {
    const parsed = parseInterruptionEvent(fixture(name));
    expect(parsed).toMatchObject({ ok: true, message: { kind, instanceIds } });
    if (parsed.ok) expect(parsed.message.eventId).toBe(JSON.parse(fixture(name)).id);
  });

  it.each([
    ['stopping', 'instanceStopped'],
    ['stopped', 'instanceStopped'],
    ['shutting-down', 'instanceTerminated'],
    ['terminated', 'instanceTerminated'],
    ['running', 'noop'],
    ['pending', 'noop'],
  ])('state %s → %s', (state, kind) => {
    expect(parseInterruptionEvent(withDetail('state-change-stopping', { state }))).toMatchObject({
      ok: true,
      message: { kind },
    });
  });

  it.each([
    [{ service: 'RDS' }, /service "RDS"/],
    [{ eventTypeCategory: 'issue' }, /category "issue"/],
    [{ affectedEntities: [{ entityValue: 'arn:aws:ec2:vol-1' }] }, /names no EC2 instance/],
  ])('health events other than EC2 scheduled changes are noops: %o', (patch, why) => {
    const parsed = parseInterruptionEvent(withDetail('health-scheduled-change', patch));
    expect(parsed).toMatchObject({ ok: true, message: { kind: 'noop', instanceIds: [] } });
    if (parsed.ok) expect(parsed.message.why).toMatch(why);
  });

  it('an unknown detail-type is a noop, not an error', () => {
    const event = {
      ...JSON.parse(fixture('rebalance')),
      'detail-type': 'EC2 Fast Snapshot Restore State-change Notification',
    };
    expect(parseInterruptionEvent(JSON.stringify(event))).toMatchObject({
      ok: true,
      message: { kind: 'noop' },
    });
    const other = {
      ...JSON.parse(fixture('rebalance')),
      source: 'aws.autoscaling',
      'detail-type': 'EC2 Instance Launch Successful',
    };
    expect(parseInterruptionEvent(JSON.stringify(other))).toMatchObject({
      ok: true,
      message: { kind: 'noop' },
    });
  });

  it.each([
    ['not JSON', '{"version": "0",', /not JSON/],
    ['no envelope', JSON.stringify({ hello: 'world' }), /not an EventBridge event/],
    [
      'wrong version',
      JSON.stringify({ ...JSON.parse(fixture('spot-interruption')), version: '1' }),
      /version/,
    ],
    [
      'spot without instance id',
      withDetail('spot-interruption', { 'instance-id': undefined }),
      /instance-id/,
    ],
    [
      'spot with a bad instance id',
      withDetail('spot-interruption', { 'instance-id': 'vol-123' }),
      /instance id/,
    ],
    ['state change without state', withDetail('state-change-stopping', { state: undefined }), /state/],
  ])('malformed: %s', (_what, body, problem) => {
    const parsed = parseInterruptionEvent(body);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(problem);
  });
});
