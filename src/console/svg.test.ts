import { describe, expect, it } from 'vitest';
import { lineChart, sparkline, statusBand, statusSegments } from './svg.js';

const DAY = 86_400_000;

describe('server-rendered charts', () => {
  it('a sparkline is one SVG path with an accessible, escaped label', () => {
    const svg = sparkline(
      [
        [0, 90],
        [DAY, 80],
        [2 * DAY, 85],
      ],
      { from: 0, to: 2 * DAY, label: '<script>x</script> score' },
    ).text;
    expect(svg).toMatch(/^<svg\s+class="spark"/);
    expect(svg).toContain('aria-label="&lt;script&gt;x&lt;/script&gt; score"');
    expect(svg).toMatch(/<path\s+class="spark-line"\s+d="M2 [\d.]+ L60 [\d.]+ L118 [\d.]+"/);
    expect(svg).not.toContain('<script>');
    expect(sparkline([], { from: 0, to: 1, label: 'none' }).text).toContain('no samples yet');
  });

  it('a line chart has date ticks, min/max labels and the zero line when the values cross it', () => {
    const svg = lineChart(
      [
        [0, 0.5],
        [5 * DAY, -0.25],
      ],
      { from: 0, to: 5 * DAY, title: 'SLA margin', unit: ' pp', zero: true },
    ).text;
    expect(svg).toContain('<figcaption>SLA margin</figcaption>');
    expect(svg).toContain('class="zero"');
    expect(svg).toContain('0.5 pp');
    expect(svg).toContain('-0.25 pp');
    expect(svg).toContain('latest -0.25 pp');
    expect(lineChart([], { from: 0, to: 1, title: 'Score' }).text).toContain(
      'No samples recorded yet.',
    );
  });

  it('status segments: what held before the window, then each change until the next', () => {
    expect(
      statusSegments(
        'operational',
        [
          { at: 5, status: 'degraded' },
          { at: 8, status: 'operational' },
        ],
        0,
        10,
      ),
    ).toEqual([
      { from: 0, to: 5, status: 'operational' },
      { from: 5, to: 8, status: 'degraded' },
      { from: 8, to: 10, status: 'operational' },
    ]);
    expect(statusSegments(null, [{ at: 4, status: 'major_outage' }], 0, 10)).toEqual([
      { from: 4, to: 10, status: 'major_outage' },
    ]);
    expect(statusSegments(null, [], 0, 10)).toEqual([]);
    const band = statusBand([{ from: 0, to: 10, status: 'major_outage' }], {
      from: 0,
      to: 10,
      title: 'Status',
    }).text;
    expect(band).toContain('class="st-major_outage"');
    expect(band).toContain('aria-label="major outage from');
  });
});
