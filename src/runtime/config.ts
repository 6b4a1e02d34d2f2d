import { z } from 'zod';
import { expected, intField } from '../config/fields.js';
import { ROLES, type Role } from './plan.js';

const ROLE_HINT = `expected a list of roles (${ROLES.join(', ')})`;

/** One role name; the error names the choices. */
export const roleSchema = z.enum(ROLES, {
  error: `unknown role; expected one of: ${ROLES.join(', ')}`,
});

/**
 * `daemon`: how one `statuswatch run` uses its cores (src/runtime/plan.ts).
 * - `threads`: `auto` (one thread, and a spare delivery thread on each further usable core,
 *   `os.availableParallelism()` bounded by the cgroup CPU quota, 8 threads at most, while
 *   deliveries pile up) or a count from 1 (one thread, every stage in it) to 64, running all the
 *   time.
 * - `roles`: the stages this process runs (`poll`, `route`, `deliver`; all by default). A Helm
 *   install can run delivery in a Deployment of its own (`--role deliver`).
 */
export const daemonConfigSchema = z
  .strictObject({
    threads: z
      .union([z.literal('auto'), intField(1, 64)], {
        error: expected('"auto" or an integer between 1 and 64'),
      })
      .default('auto'),
    roles: z
      .array(roleSchema, { error: expected(ROLE_HINT) })
      .min(1, { error: 'name at least one role' })
      .refine((roles) => new Set(roles).size === roles.length, { error: 'a role is named twice' })
      .default([...ROLES]),
  })
  .prefault({});

export type DaemonConfig = z.output<typeof daemonConfigSchema>;

/** `--role poll,route`: the roles named, or an error naming the bad one. */
export function parseRoles(text: string): Role[] | { error: string } {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) return { error: `--role: ${ROLE_HINT}` };
  const roles: Role[] = [];
  for (const name of names) {
    const parsed = roleSchema.safeParse(name);
    if (!parsed.success)
      return { error: `--role: unknown role "${name}"; expected one of: ${ROLES.join(', ')}` };
    if (!roles.includes(parsed.data)) roles.push(parsed.data);
  }
  return roles;
}
