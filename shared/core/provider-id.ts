/** `i-0123…` from `aws:///us-east-1a/i-0123…`; undefined when the providerID is not AWS's. */
export function parseInstanceId(providerId: string | undefined): string | undefined {
  const match = providerId === undefined ? null : /^aws:\/\/\/[^/]*\/(i-[0-9a-zA-Z]+)$/.exec(providerId);
  return match?.[1];
}
