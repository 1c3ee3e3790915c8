import { describe, expect, it } from 'vitest';
import { replaceVersion } from './chart-file-edit.ts';

describe('writing a new version into helm-chart.yaml', () => {
  it('changes only the version, keeping comments, order and quoting', () => {
    const text =
      '# pinned by ops\nhelmChart:\n  repo: https://x.io # mirror\n  chartName: app\n  chartVersion: "1.0.0" # bump with helm-update\n  releaseName: app\n';
    expect(replaceVersion(text, 'chartVersion', '1.0.1', 'f')).toBe(text.replace('"1.0.0"', '"1.0.1"'));
    const single = text.replace('"1.0.0"', "'1.0.0'");
    expect(replaceVersion(single, 'chartVersion', '1.0.1', 'f')).toBe(single.replace("'1.0.0'", "'1.0.1'"));
  });

  it('keeps a plain scalar plain unless the new value would read as a number', () => {
    const text = 'helmChart:\n  chartVersion: 1.2.3\n  repo: https://x.io\n';
    expect(replaceVersion(text, 'chartVersion', '1.2.4', 'f')).toBe('helmChart:\n  chartVersion: 1.2.4\n  repo: https://x.io\n');
    expect(replaceVersion(text, 'chartVersion', '1.10', 'f')).toBe('helmChart:\n  chartVersion: "1.10"\n  repo: https://x.io\n');
  });

  it("moves a git chart's tag, in block or flow style", () => {
    expect(replaceVersion('helmChart:\n  git:\n    url: u\n    ref: {tag: v1.0.0}\n', 'gitTag', 'v1.1.0', 'f')).toBe(
      'helmChart:\n  git:\n    url: u\n    ref: {tag: v1.1.0}\n',
    );
    expect(replaceVersion('helmChart:\n  git:\n    ref:\n      tag: v1.0.0 # x\n', 'gitTag', 'v2.0.0', 'f')).toBe(
      'helmChart:\n  git:\n    ref:\n      tag: v2.0.0 # x\n',
    );
  });

  it('names the file when the field is not a scalar', () => {
    expect(() => replaceVersion('helmChart:\n  repo: x\n', 'chartVersion', '1', 'dir/helm-chart.yaml')).toThrow(
      'dir/helm-chart.yaml: helmChart.chartVersion is not a plain value',
    );
  });
});
