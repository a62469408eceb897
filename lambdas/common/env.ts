import type { z } from 'zod';
import { ValidationError } from '../../shared/core/errors.ts';

// A Lambda's environment parsed at cold start, every problem listed at once. Kept apart from
// wiring.ts so a Lambda that reaches neither the cluster nor EC2 bundles none of their clients.

/** `env` parsed with `schema`; a ValidationError naming every problem when it does not parse. */
export function parseLambdaEnv<S extends z.ZodType>(
  lambda: string,
  schema: S,
  env: NodeJS.ProcessEnv,
): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ValidationError(
      `${lambda} Lambda environment`,
      'env',
      `${problems}; the CDK stack sets these variables`,
    );
  }
  return parsed.data;
}
