/** A location inside the config document, as zod and the YAML walker report it. */
export type ConfigPath = readonly (string | number)[];

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Formats a path the way users read it: `channels.oncall.webhookUrl`,
 * `subscriptions[0].events[2]`; keys that are not plain identifiers are quoted
 * (`headers["x.y"]`). The empty path is `(root)`.
 */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out === '' ? '(root)' : out;
}
