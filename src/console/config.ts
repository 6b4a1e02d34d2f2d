/**
 * The console's settings: `server.console` in the config file (absent: sessions of 12 h, no
 * trusted proxy). `trustedProxies` also decides whose X-Forwarded-For names the client for the
 * API's failed-attempt limit and audit log (`src/server/client-address.ts`).
 *
 * ```yaml
 * server:
 *   console:
 *     sessionTtl: 12h
 *     trustedProxies: [10.0.0.7]            # socket addresses whose X-Forwarded-* / user header count
 *     proxyAuth:                            # oauth2-proxy style: the proxy authenticated the user
 *       header: X-Forwarded-User
 *       teams: { alice: payments, bob: search }
 *       admins: [carol]
 * ```
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { booleanField, durationField, expected } from '../config/fields.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const HEADER = /^[A-Za-z0-9-]+$/;
const MINUTE = 60_000;

export const consoleConfigSchema = z.strictObject({
  /** Serve the console at `/` of the ops server (default true). */
  enabled: booleanField().default(true),
  /** How long a login lasts (default 12h). */
  sessionTtl: durationField(MINUTE).default(12 * 60 * MINUTE),
  /**
   * Socket addresses of reverse proxies: from them (only) `X-Forwarded-Proto: https` marks the
   * session cookie Secure, the proxy user header (`proxyAuth`) is believed, and `X-Forwarded-For`
   * names the client whose failed logins are counted (console and API).
   */
  trustedProxies: z
    .array(
      z
        .string({ error: expected('an IP address') })
        .refine((v) => isIP(v) !== 0, { error: 'expected an IPv4 or IPv6 address' }),
      { error: expected('a list of IP addresses') },
    )
    .default([]),
  /** A proxy that authenticates users (oauth2-proxy) names them in a header; map them to teams. */
  proxyAuth: z
    .strictObject({
      header: z
        .string({ error: expected('a header name') })
        .regex(HEADER, { error: 'expected a header name' })
        .default('X-Forwarded-User'),
      /** user → team. */
      teams: z
        .record(z.string().min(1), z.string().regex(NAME, { error: 'expected a team name' }))
        .default({}),
      /** Users who see everything. */
      admins: z.array(z.string().min(1)).default([]),
    })
    .optional(),
});

export type ConsoleConfig = z.output<typeof consoleConfigSchema>;

export const DEFAULT_CONSOLE_CONFIG: ConsoleConfig = consoleConfigSchema.parse({});

/**
 * The console settings of a parsed `server` section: its `console` key, else the defaults. (The
 * section is already parsed: parsing it again would refuse its own output, durations as numbers.)
 */
export function consoleConfigOf(server: { console?: ConsoleConfig | undefined }): ConsoleConfig {
  return server.console ?? DEFAULT_CONSOLE_CONFIG;
}
