/**
 * Parsing of get_image placeholders. The payloads are built here as Python's json.dumps writes them
 * (`{"image": "x"}`, non-ASCII \u-escaped); the worker's own output is checked in kluctl-functions.test.ts and
 * test/conformance/jinja2/images.yaml.
 */
import { describe, expect, it } from 'vitest';
import { BEGIN, END, parseImagePlaceholders } from './image-placeholder.ts';

function placeholder(json: string): string {
  return `${BEGIN}${Buffer.from(json, 'utf8').toString('base64')}${END}`;
}

describe('parseImagePlaceholders', () => {
  it('finds nothing in text without placeholders', () => {
    expect(parseImagePlaceholders('image: nginx:1.27')).toEqual([]);
  });

  it('finds a placeholder that is the whole text', () => {
    const text = placeholder('{"image": "nginx"}');
    expect(parseImagePlaceholders(text)).toEqual([{ image: 'nginx', start: 0, end: text.length }]);
  });

  it('finds several placeholders between other text, with offsets that replace them', () => {
    const first = placeholder('{"image": "registry.example.com/team/app"}');
    const second = placeholder('{"image": "\\u00e9/x"}');
    const text = `a ${first} b ${second}`;
    const found = parseImagePlaceholders(text);
    expect(found).toEqual([
      { image: 'registry.example.com/team/app', start: 2, end: 2 + first.length },
      { image: 'é/x', start: 2 + first.length + 3, end: text.length },
    ]);
    let replaced = text;
    for (const { start, end, image } of [...found].reverse()) replaced = replaced.slice(0, start) + `<${image}>` + replaced.slice(end);
    expect(replaced).toBe('a <registry.example.com/team/app> b <é/x>');
  });

  it('refuses a begin marker without an end marker', () => {
    expect(() => parseImagePlaceholders(`x ${BEGIN}eyJpbWFnZSI6ICJ4In0=`)).toThrow(
      `image placeholder at offset 2 has no end marker ${END}`,
    );
  });

  it('refuses payloads that are not base64 of JSON with a string image', () => {
    expect(() => parseImagePlaceholders(`${BEGIN}not base64!${END}`)).toThrow(
      'image placeholder at offset 0 is invalid: its payload is not base64',
    );
    expect(() => parseImagePlaceholders(`${BEGIN}eyJpbWFnZSI6ICJ4In0${END}`)).toThrow('its payload is not base64');
    expect(() => parseImagePlaceholders(placeholder('{"image": '))).toThrow('its payload is not JSON');
    expect(() => parseImagePlaceholders(placeholder('{"image": 5}'))).toThrow('its payload has no string "image"');
    expect(() => parseImagePlaceholders(placeholder('null'))).toThrow('its payload has no string "image"');
  });
});
