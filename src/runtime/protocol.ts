/**
 * The messages between the main thread (src/runtime/supervisor.ts) and a worker thread
 * (src/runtime/thread.ts). Both ends are this program; the shapes are still checked on arrival,
 * as a thread that is out of step must not be believed.
 */
import { z } from 'zod';
import { roleSchema } from './config.js';

/** What a thread is started with (`workerData`). */
export const threadDataSchema = z.strictObject({
  /** The thread's name in logs and metrics: `upstream`, `deliver-1`, … */
  name: z.string().min(1),
  /** The config file the thread loads (the main thread loaded and validated it just before). */
  configFile: z.string().min(1),
  roles: z.array(roleSchema),
  /** Human-readable log lines (the main thread's stdout is a terminal). */
  pretty: z.boolean(),
  /** The log level of the thread's lines (default pino's, info). */
  logLevel: z.string().optional(),
  /** BullMQ lock duration of delivery jobs (tests shorten how soon a dead thread's jobs are taken over). */
  deliveryLockMs: z.number().int().positive().optional(),
  /** A spare delivery thread: it hands its last counters over when it stops (`stopped`). */
  spare: z.boolean().optional(),
});
export type ThreadData = z.infer<typeof threadDataSchema>;

/** A thread's answer to `readiness`: its App's (src/server/ops.ts `Readiness`). */
export const threadReadinessSchema = z.object({
  ready: z.boolean(),
  checks: z.record(z.string(), z.boolean()),
  redis: z
    .object({
      refusing: z.array(z.string()),
      hint: z.string(),
      since: z.string(),
      commands: z.array(z.string()).optional(),
    })
    .optional(),
});
export type ThreadReadiness = z.infer<typeof threadReadinessSchema>;

/** A thread's readiness as the main thread's App takes it (`AppPeers`): only what it reads. */
export interface PeerReadiness {
  ready: boolean;
  redis?: { refusing: string[]; hint: string; since: string; commands?: string[] };
}

/** `ThreadReadiness` without its absent fields (exact optional properties). */
export function peerReadinessOf(r: ThreadReadiness): PeerReadiness {
  if (r.redis === undefined) return { ready: r.ready };
  const { commands, ...redis } = r.redis;
  return { ready: r.ready, redis: commands === undefined ? redis : { ...redis, commands } };
}

/** Main thread → worker thread. */
export const toThreadSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('metrics'), id: z.number() }),
  z.strictObject({ type: z.literal('readiness'), id: z.number() }),
  z.strictObject({ type: z.literal('reload') }),
  z.strictObject({ type: z.literal('stop') }),
]);
export type ToThread = z.infer<typeof toThreadSchema>;

/** Worker thread → main thread. */
export const fromThreadSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('started') }),
  /** The start failed: the thread ends (and is started again, later). */
  z.strictObject({ type: z.literal('failed'), message: z.string() }),
  z.strictObject({ type: z.literal('reply'), id: z.number(), value: z.unknown() }),
  /**
   * `stop` is done: every in-flight job finished or went back to its queue. A spare's carries its
   * last metrics (`getMetricsAsJSON()`), which the supervisor keeps adding up.
   */
  z.strictObject({ type: z.literal('stopped'), metrics: z.array(z.unknown()).optional() }),
]);
export type FromThread = z.infer<typeof fromThreadSchema>;
