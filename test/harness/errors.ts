/** A harness service could not be installed, built or started. The message says which and why. */
export class HarnessError extends Error {
  override readonly name = 'HarnessError';
}
