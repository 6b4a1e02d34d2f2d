import { execFile } from 'node:child_process';

/** `promtool check metrics` on a scrape's text; null when promtool is not installed. */
export async function promtoolCheck(
  text: string,
): Promise<{ code: number; stdout: string; stderr: string } | null> {
  return new Promise((resolve) => {
    const child = execFile('promtool', ['check', 'metrics'], (err, stdout, stderr) => {
      if (err !== null && (err as NodeJS.ErrnoException).code === 'ENOENT') {
        resolve(null);
        return;
      }
      resolve({ code: err === null ? 0 : Number(err.code ?? 1), stdout, stderr });
    });
    child.stdin?.end(text);
  });
}
