/**
 * What decoding one message body gives: the message, or what is wrong with a malformed body
 * (a value, never a throw, so a batch can reject the one record and go on).
 */
export type Decoded<T> =
  | { readonly ok: true; readonly message: T }
  | { readonly ok: false; readonly problem: string };
