#!/usr/bin/env node
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve as resolvePath } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { toError } from './errors.js';
import { createLogger } from './log.js';
import { loadConfig, resolveConfigPath, ConfigError } from './config/load.js';
import { redactText, secretValues } from './config/redact.js';
import type { Config } from './config/schema.js';
import { ownValue } from './config/fields.js';
import { parseDuration } from './config/duration.js';
import { BudgetError } from './app.js';
import { Daemon, daemonPlan } from './runtime/daemon.js';
import { reexecWithHeapFlags } from './runtime/reexec.js';
import { parseRoles } from './runtime/config.js';
import type { Role } from './runtime/plan.js';
// The simulator and the demo (with its SMTP and Slack sinks: smtp-server, mailparser) are imported
// by their commands only: `run` does not load them (every byte of code is heap in the process).
import { MAX_SERVICES } from './sim/catalog.js';
import { WORDINGS, type Wording } from './sim/wording.js';
import { checkConfigReport } from './commands/check-config.js';
import { registerSilenceCommands } from './commands/silence.js';
import { registerSubscriptionCommands } from './commands/subscription.js';
import { registerChannelCommands } from './commands/channel.js';
import { registerTokenCommands } from './commands/token.js';
import { registerSecretsCommands } from './commands/secrets.js';
import { notifyTest } from './commands/notify-test.js';
import { renderForChannel } from './commands/render.js';
import { EVENT_KINDS, type EventKind } from './config/events.js';

/** Exit codes: 0 ok, 1 invalid input (config, arguments), 2 runtime failure. */
const EXIT_INVALID = 1;
const EXIT_FAILURE = 2;

function intOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
    }
    return n;
  };
}

/**
 * `STATUSWATCH_GRACE_MS`: how long a stop may drain before the process exits anyway. Whole
 * milliseconds (`25000`) or a duration (`25s`); default 25 s. Anything else is refused at start
 * (a value read as NaN made every stop exit at once, without a drain).
 */
/** The longest delay a Node.js timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function graceMs(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 25_000;
  const text = raw.trim();
  let ms: number;
  try {
    ms = /^\d+$/.test(text) ? Number(text) : parseDuration(text);
  } catch {
    fail(
      `STATUSWATCH_GRACE_MS: expected milliseconds (such as 25000) or a duration (such as 25s)`,
      EXIT_INVALID,
    );
  }
  // A timer longer than this fires at once (Node clamps it to 1 ms): no drain at all.
  if (ms > MAX_TIMER_MS)
    fail(`STATUSWATCH_GRACE_MS: at most ${String(MAX_TIMER_MS)} ms (about 24 days)`, EXIT_INVALID);
  return ms;
}

function fail(message: string, code = EXIT_FAILURE): never {
  process.stderr.write(`statuswatch: ${message}\n`);
  process.exit(code);
}

async function readConfig(explicit: string | undefined): Promise<{ file: string; config: Config }> {
  const file = resolveConfigPath(explicit);
  try {
    return { file, config: await loadConfig(file) };
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, EXIT_INVALID);
    throw err;
  }
}

/** The config and one of its channels, or exit 1 naming the channels there are. */
async function readChannel(
  explicit: string | undefined,
  name: string,
): Promise<{ config: Config; channel: Config['channels'][string] }> {
  const { config } = await readConfig(explicit);
  const channel = ownValue(config.channels, name);
  if (channel === undefined) {
    const names = Object.keys(config.channels).join(', ') || 'none';
    fail(`no channel "${name}" in the config (channels: ${names})`, EXIT_INVALID);
  }
  return { config, channel };
}

interface RunOptions {
  config?: string;
  /** `--role`: the roles this process runs (overrides `daemon.roles`). */
  roles?: Role[];
  /** `--threads`: overrides `daemon.threads`. */
  threads?: 'auto' | number;
}

async function runDaemon(o: RunOptions): Promise<void> {
  const { file, config } = await readConfig(o.config);
  const grace = graceMs(process.env.STATUSWATCH_GRACE_MS);
  // The main thread's young generation and the allocator's arenas (src/runtime/reexec.ts): the
  // process re-executes itself with them before anything starts, where Node.js can.
  const chosen = {
    ...(o.roles === undefined ? {} : { roles: o.roles }),
    ...(o.threads === undefined ? {} : { threads: o.threads }),
  };
  const planned = daemonPlan({ config, ...chosen });
  reexecWithHeapFlags(planned.plan.main);
  const secrets = secretValues(config);
  // The App adds the config's secrets (and later ones) to the lines' scrub list.
  const log = createLogger({ pretty: process.stdout.isTTY });
  let app: Daemon;
  try {
    app = new Daemon({
      configFile: file,
      config,
      log,
      pretty: process.stdout.isTTY,
      ownOutbound: true,
      ...chosen,
      planned,
    });
  } catch (err) {
    if (err instanceof BudgetError) fail(err.message, EXIT_INVALID);
    throw err;
  }
  // Signals are handled from here on, also while the start waits (for Redis, say): a stop then
  // drains what has started, within the grace period, instead of being ignored by a PID 1.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'app:signal', signal }, `${signal}: draining`);
    const timer = setTimeout(() => {
      log.error(
        { event: 'app:grace_exceeded' },
        'drain took longer than the grace period; exiting',
      );
      process.exit(EXIT_FAILURE);
    }, grace);
    timer.unref();
    app
      .stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ event: 'app:stop_failed', err: toError(err).message }, 'stop failed');
        process.exit(EXIT_FAILURE);
      });
  };
  process.on('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.on('SIGINT', () => {
    stop('SIGINT');
  });
  await app.start();
  log.info({ event: 'config:loaded', file }, `config ${file}`);

  let reloading = Promise.resolve();
  const reload = (why: string): void => {
    reloading = reloading.then(async () => {
      try {
        const next = await loadConfig(file);
        app.reload(next);
        log.info({ event: 'config:reload', why }, `config reloaded (${why})`);
      } catch (err) {
        app.app.metrics.configReloads.inc({ outcome: 'rejected' });
        const message = redactText(toError(err).message, secrets);
        log.error(
          { event: 'config:rejected', why, err: message },
          'new config rejected; the old one stays in force',
        );
      }
    });
  };
  process.on('SIGHUP', () => {
    reload('SIGHUP');
  });
  // Kubernetes updates a mounted ConfigMap by swapping a `..data` symlink in its directory, which
  // a watch on the file itself would miss after the first swap: watch the directory and reload
  // when the file's content actually changed.
  let debounce: NodeJS.Timeout | null = null;
  let lastText = await readFile(file, 'utf8').catch(() => '');
  try {
    const watcher = watch(dirname(resolvePath(file)), { persistent: false }, () => {
      if (debounce !== null) clearTimeout(debounce);
      debounce = setTimeout(() => {
        void readFile(file, 'utf8')
          .then((text) => {
            if (text === lastText) return;
            lastText = text;
            reload('file changed');
          })
          .catch(() => undefined);
      }, 300);
    });
    watcher.on('error', () => undefined);
  } catch {
    log.warn(
      { event: 'config:unwatched', file },
      'cannot watch the config file; use SIGHUP to reload',
    );
  }
}

async function simulate(o: {
  port: number;
  host: string;
  variant: 'A' | 'B';
  wording: Wording;
  services: number;
  seed: number;
  scenario?: string;
  key?: string[];
  rateLimit: boolean;
}): Promise<void> {
  const keys: Record<string, { scopes: string[] }> = Object.fromEntries(
    (o.key ?? []).map((k) => [
      k,
      { scopes: ['sla:read', 'scores:read', 'rankings:read', 'analytics:read'] },
    ]),
  );
  const { createSimulator, loadScenario } = await import('./sim/index.js');
  const sim = createSimulator({
    services: o.services,
    seed: o.seed,
    variant: o.variant,
    wording: o.wording,
    keys,
    ...(o.rateLimit ? {} : { rateLimit: false as const }),
  });
  const url = await sim.listen(o.port, o.host);
  process.stdout.write(
    `statuswatch simulator (variant ${o.variant}, ${o.services} services, ${o.wording} wording) at ${url}/api/v1\n`,
  );
  if (o.scenario !== undefined) {
    const scenario = await loadScenario(o.scenario);
    const run = sim.play(scenario);
    process.stdout.write(`playing scenario ${o.scenario} (${scenario.steps.length} steps)\n`);
    void run.done.then(() => process.stdout.write('scenario finished\n'));
  }
  const close = (): void => {
    void sim.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', close);
  process.on('SIGINT', close);
}

function buildProgram(): Command {
  const program = new Command();
  program
    .name('statuswatch')
    .description(
      'Watches a Service Status and Reliability Read API and alerts teams when services they depend on have trouble',
    )
    .showHelpAfterError()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  const configOption = () =>
    new Option(
      '-c, --config <file>',
      'config file (default $STATUSWATCH_CONFIG, then config/statuswatch.yaml)',
    );

  program
    .command('run')
    .description('run the daemon: pollers, routing, delivery and the ops HTTP server')
    .addOption(configOption())
    .option(
      '--role <roles>',
      'the stages this process runs, comma-separated: poll, route, deliver (default all; overrides daemon.roles)',
      (text: string) => {
        const roles = parseRoles(text);
        if ('error' in roles) throw new InvalidArgumentError(roles.error);
        return roles;
      },
    )
    .option(
      '--threads <count>',
      'threads: auto (one thread, and spare delivery threads on the other usable cores while deliveries pile up; 8 at most) or 1 to 64 running all the time; 1 runs everything in one thread (overrides daemon.threads)',
      (text: string) => {
        if (text === 'auto') return 'auto' as const;
        const n = Number(text);
        if (!Number.isInteger(n) || n < 1 || n > 64)
          throw new InvalidArgumentError('expected auto or an integer between 1 and 64');
        return n;
      },
    )
    .action(async (o: { config?: string; role?: Role[]; threads?: 'auto' | number }) => {
      await runDaemon({
        ...(o.config === undefined ? {} : { config: o.config }),
        ...(o.role === undefined ? {} : { roles: o.role }),
        ...(o.threads === undefined ? {} : { threads: o.threads }),
      });
    });

  program
    .command('check-config')
    .description(
      'validate the config; print channels, subscriptions and the request plan against the budget',
    )
    .addOption(configOption())
    .option('--offline', 'do not resolve categories against the upstream')
    .action(async (o: { config?: string; offline?: boolean }) => {
      const { file, config } = await readConfig(o.config);
      const report = await checkConfigReport(file, config, { offline: o.offline === true });
      process.stdout.write(report.text);
      process.exit(report.ok ? 0 : EXIT_INVALID);
    });

  program
    .command('simulate')
    .description('run the bundled upstream simulator')
    .option('-p, --port <n>', 'port', intOption('--port', 0, 65535), 4010)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .addOption(new Option('--variant <v>', 'response variant').choices(['A', 'B']).default('A'))
    .addOption(
      new Option(
        '--wording <w>',
        'words of the fields the contract does not enumerate (alternate: a different vocabulary)',
      )
        .choices([...WORDINGS])
        .default('standard'),
    )
    .option('--services <n>', 'catalog size', intOption('--services', 1, MAX_SERVICES), 2000)
    .option('--seed <n>', 'catalog seed', intOption('--seed', 0, 2 ** 31 - 1), 42)
    .option('--scenario <file>', 'scenario timeline (YAML or JSON) to play')
    .option('--key <key...>', 'API keys to accept (all premium scopes)')
    .option(
      '--no-rate-limit',
      'answer without rate limits (30/min public, 120/min with a key by default)',
    )
    .action(simulate);

  program
    .command('notify-test')
    .description('send one test notification through a channel and report the outcome')
    .requiredOption('--channel <name>', 'channel name from the config')
    .addOption(configOption())
    .action(async (o: { channel: string; config?: string }) => {
      const { config, channel } = await readChannel(o.config, o.channel);
      const result = await notifyTest(o.channel, channel);
      // Run by the operator on their config: the receiver's own words (`detail`) are shown too.
      const detail = result.detail === null ? '' : `  detail: ${result.detail}\n`;
      (result.ok ? process.stdout : process.stderr).write(
        redactText(`${result.text}${detail}`, secretValues(config)),
      );
      process.exit(result.ok ? 0 : EXIT_FAILURE);
    });

  program
    .command('render')
    .description('print exactly what a channel would receive for a sample transition')
    .addOption(
      new Option('--event <kind>', 'event kind').choices([...EVENT_KINDS]).makeOptionMandatory(),
    )
    .requiredOption('--channel <name>', 'channel name from the config')
    .addOption(configOption())
    .action(async (o: { event: EventKind; channel: string; config?: string }) => {
      const { config, channel } = await readChannel(o.config, o.channel);
      process.stdout.write(
        redactText(
          renderForChannel(o.event, o.channel, channel, Date.now(), config.server.publicUrl),
          secretValues(config),
        ),
      );
    });

  registerSilenceCommands(program, async (explicit) => (await readConfig(explicit)).config);
  const loadForApi = async (explicit?: string) => (await readConfig(explicit)).config;
  registerSubscriptionCommands(program, loadForApi);
  registerChannelCommands(program, loadForApi);
  registerTokenCommands(program, loadForApi);
  registerSecretsCommands(program, loadForApi);

  program
    .command('demo')
    .description(
      'simulator + daemon + local Slack, e-mail and webhook sinks; prints each notification',
    )
    .option('--duration <seconds>', 'how long to run', intOption('--duration', 10, 3600), 90)
    .option('--verbose', 'also print the daemon log')
    .action(async (o: { duration: number; verbose?: boolean }) => {
      const { runDemo } = await import('./commands/demo.js');
      const code = await runDemo({ durationMs: o.duration * 1000, verbose: o.verbose === true });
      process.exit(code);
    });

  return program;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    fail(toError(err).message, EXIT_FAILURE);
  });
