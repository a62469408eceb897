// What the CRDs' patterns mean, in words, for messages a person can act on. A pattern without a
// hint is quoted as it is.

const HINTS: Readonly<Record<string, string>> = {
  '^(([0-9]+(s|m|h))+|Never)$': 'a duration in hours, minutes and seconds such as 30s, 5m or 720h, or Never',
  '^([0-9]+(s|m|h))+$': 'a duration in hours, minutes and seconds such as 30s, 5m or 1h30m',
  '^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$': 'a duration in hours and minutes such as 30m, 8h or 1h30m',
  '^((100|[0-9]{1,2})%|[0-9]+)$': 'a number of nodes such as 3, or a percentage from 0% to 100% such as 10%',
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$':
    'a Kubernetes quantity such as 500m, 2Gi or 100',
  '^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$':
    'a cron expression of five fields such as "0 9 * * 1-5", or a macro such as @daily',
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$':
    'a label key or value: an optional DNS prefix and /, then letters, digits, -, _ and ., starting and ending with a letter or digit',
  '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$':
    'a label value: letters, digits, -, _ and ., starting and ending with a letter or digit',
  '^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$':
    'a volume size such as 20Gi, 100G or 1Ti',
};

/** What a string matching `pattern` looks like, when the pattern is one the CRDs use. */
export function patternHint(pattern: string): string | undefined {
  return HINTS[pattern];
}
