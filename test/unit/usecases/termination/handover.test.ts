import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../../shared/runtime/logger.ts';
import { handToTermination } from '../../../../shared/usecases/termination/handover.ts';

describe('handing a deleted NodeClaim to termination', () => {
  const logged = () => {
    const lines: Record<string, unknown>[] = [];
    const logger = makeLogger({}, { sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    return { lines, logger };
  };

  it('leaves it to the termination sweep when there is no queue', async () => {
    const { lines, logger } = logged();
    expect(await handToTermination(undefined, 'web-1', logger)).toBe('termination sweep');
    expect(lines).toEqual([]);
  });

  it('sends it on the termination queue', async () => {
    const { lines, logger } = logged();
    const sent: string[] = [];
    const request = async (name: string) => {
      sent.push(name);
    };
    expect(await handToTermination(request, 'web-1', logger)).toBe('termination queue');
    expect(sent).toEqual(['web-1']);
    expect(lines).toEqual([]);
  });

  it('falls back to the sweep when the message cannot be sent, and says so once', async () => {
    const { lines, logger } = logged();
    const request = async () => {
      throw new Error('throttled');
    };
    expect(await handToTermination(request, 'web-1', logger, { nodeClaim: 'web-1', nodePool: 'p' })).toBe(
      'termination sweep',
    );
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'termination request not sent',
        nodeClaim: 'web-1',
        nodePool: 'p',
        fallback: 'termination sweep',
      }),
    ]);
  });
});
