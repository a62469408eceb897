import { describe, expect, it } from 'vitest';
import { parseCommandArgs, stringValue } from '../../../shared/cli/command.ts';

const OPTIONS = { cluster: { type: 'string' }, verbose: { type: 'boolean' } } as const;

describe('command arguments', () => {
  it('takes --name value and --name=value, and positionals up to the limit', () => {
    const parsed = parseCommandArgs(['--cluster', 'a.yaml', 'x', '--verbose'], OPTIONS, 1);
    expect(parsed).toEqual({ values: { cluster: 'a.yaml', verbose: true }, positionals: ['x'] });
    const equals = parseCommandArgs(['--cluster=b.yaml'], OPTIONS, 0);
    expect('problem' in equals ? undefined : stringValue(equals, 'cluster')).toBe('b.yaml');
  });

  it('words each refusal for a terminal', () => {
    expect(parseCommandArgs(['--dry'], OPTIONS, 0)).toEqual({ problem: 'unknown option --dry' });
    expect(parseCommandArgs(['--cluster'], OPTIONS, 0)).toEqual({ problem: '--cluster needs a value' });
    expect(parseCommandArgs(['--verbose=yes'], OPTIONS, 0)).toEqual({ problem: '--verbose takes no value' });
    expect(parseCommandArgs(['stray'], OPTIONS, 0)).toEqual({ problem: 'unexpected argument "stray"' });
    expect(parseCommandArgs(['a', 'b'], OPTIONS, 1)).toEqual({ problem: 'too many arguments: a b' });
  });

  it('counts an empty value as missing', () => {
    const parsed = parseCommandArgs(['--cluster='], OPTIONS, 0);
    expect('problem' in parsed ? 'refused' : stringValue(parsed, 'cluster')).toBeUndefined();
  });
});
