import { describe, expect, it } from 'vitest';
import { makeLogger } from '../../../shared/runtime/logger.ts';

function capture(level?: 'debug' | 'info' | 'warn' | 'error') {
  const lines: Record<string, unknown>[] = [];
  const logger = makeLogger(
    { component: 'test' },
    {
      ...(level ? { level } : {}),
      sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
      now: () => new Date('2026-01-02T03:04:05.000Z'),
    },
  );
  return { logger, lines };
}

describe('makeLogger', () => {
  it('writes one JSON line per call with level, time, message and fields', () => {
    const { logger, lines } = capture();
    logger.info('launched nodeclaim', { nodePool: 'default', pods: 3 });
    expect(lines).toEqual([
      {
        level: 'info',
        time: '2026-01-02T03:04:05.000Z',
        message: 'launched nodeclaim',
        component: 'test',
        nodePool: 'default',
        pods: 3,
      },
    ]);
  });

  it('drops lines below its level', () => {
    const { logger, lines } = capture('warn');
    logger.debug('a');
    logger.info('b');
    logger.warn('c');
    logger.error('d');
    expect(lines.map((line) => line['message'])).toEqual(['c', 'd']);
  });

  it('child loggers add their fields to every line', () => {
    const { logger, lines } = capture();
    logger.child({ requestId: 'r-1' }).info('x', { n: 1 });
    expect(lines[0]).toMatchObject({ component: 'test', requestId: 'r-1', n: 1 });
  });

  it('serialises errors with their cause instead of as empty objects', () => {
    const { logger, lines } = capture();
    logger.error('launch failed', { error: new Error('outer', { cause: new Error('inner') }) });
    expect(lines[0]?.['error']).toEqual({
      name: 'Error',
      message: 'outer',
      cause: { name: 'Error', message: 'inner' },
    });
  });

  it('tells the fields it adds to every line, its children’s included', () => {
    const { logger, lines } = capture();
    const child = logger.child({ cluster: 'prod' });
    expect(logger.fields).toEqual({ component: 'test' });
    expect(child.fields).toEqual({ component: 'test', cluster: 'prod' });
    child.info('x');
    expect(lines[0]).toEqual({
      level: 'info',
      time: '2026-01-02T03:04:05.000Z',
      message: 'x',
      component: 'test',
      cluster: 'prod',
    });
  });
});
