/**
 * `statuswatch channel list | get NAME | apply -f FILE | delete NAME | test NAME | preview NAME
 * --event KIND`: channels through the daemon's API (`/api/v1/channels`). Secret fields are
 * write-only: they read back as "<set>", and "<set>" in an applied file keeps the stored value.
 */
import { Option, type Command } from 'commander';
import type { Config } from '../config/schema.js';
import { EVENT_KINDS } from '../config/events.js';
import { EXIT_FAILURE, processIo, type CommandIo, type TargetFlags } from '../api/client.js';
import { registerObjectCommands } from '../api/objects-cli.js';

export function registerChannelCommands(
  program: Command,
  loadConfig: (explicit?: string) => Promise<Config>,
  io: CommandIo = processIo,
): Command {
  return registerObjectCommands(program, 'channel', loadConfig, io, (group, run, addTarget) => {
    addTarget(
      group
        .command('test')
        .description('send one test notification through the channel')
        .argument('<name>'),
    ).action(async (name: string, o: TargetFlags) => {
      await run(o, async (client) => {
        const { body } = await client.call<{ ok: boolean; message: string }>(
          'POST',
          `/api/v1/channels/${encodeURIComponent(name)}/test`,
        );
        (body.ok ? io.out : io.err)(`${body.message}\n`);
        if (!body.ok) io.exit(EXIT_FAILURE);
      });
    });
    addTarget(
      group
        .command('preview')
        .description('print exactly what the channel would receive for a sample event')
        .argument('<name>')
        .addOption(
          new Option('--event <kind>', 'event kind')
            .choices([...EVENT_KINDS])
            .makeOptionMandatory(),
        ),
    ).action(async (name: string, o: TargetFlags & { event: string }) => {
      await run(o, async (client) => {
        const { body } = await client.call<{ preview: string }>(
          'GET',
          `/api/v1/channels/${encodeURIComponent(name)}/preview?event=${encodeURIComponent(o.event)}`,
        );
        io.out(body.preview.endsWith('\n') ? body.preview : `${body.preview}\n`);
      });
    });
  });
}
