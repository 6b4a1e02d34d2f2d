/**
 * `statuswatch subscription list | get NAME | apply -f FILE | delete NAME`: subscriptions through
 * the daemon's API (`/api/v1/subscriptions`), as a team (its token) or an admin.
 */
import type { Command } from 'commander';
import type { Config } from '../config/schema.js';
import { processIo, type CommandIo } from '../api/client.js';
import { registerObjectCommands } from '../api/objects-cli.js';

export function registerSubscriptionCommands(
  program: Command,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: CommandIo = processIo,
): Command {
  return registerObjectCommands(program, 'subscription', loadConfig, io);
}
