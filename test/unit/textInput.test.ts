// The checks of api/plugins/textInput.ts (issue 26 item 7): what counts as a bad byte in a URL and in a
// parsed body. The answers themselves (400 invalid_request with the rate-limit headers) are tested over
// HTTP in test/api/hardeningLedger.test.ts and by the fuzz generator (test/api/fuzz.test.ts).
import { describe, expect, it } from 'vitest';
import { bodyTextProblem, urlTextProblem } from '../../api/plugins/textInput.js';

describe('bad bytes', () => {
  it('in a URL: a percent-encoded NUL, or a percent-encoded run that is not UTF-8', () => {
    for (const url of ['/market/tasks?posterDid=%00', '/agents/x%00', '/a?b=c%00d']) expect(urlTextProblem(url), url).toBe('a NUL character');
    // a stray continuation byte, a cut-off character, an overlong "/", a surrogate, past U+10FFFF
    for (const url of ['/a?b=%FF', '/a?b=%C3', '/a?b=%C3%28', '/a?b=%C0%AF', '/a?b=%ED%A0%80', '/a?b=%F4%90%80%80', '/a/%80']) expect(urlTextProblem(url), url).toBe('bytes that are not UTF-8');
  });

  it('in a URL, what is text passes: UTF-8 in either case of hex, reserved characters, a literal %', () => {
    for (const url of ['/agents', '/a?b=caf%C3%A9', '/a?b=caf%c3%a9%20%F0%9F%A6%80', '/did/did%3Ahedera%3Alocal%3A0.0.2', '/a?b=100%', '/a?b=%zz', '/a?b=%2500']) expect(urlTextProblem(url), url).toBeNull();
  });

  it('in a parsed body: NUL or a lone surrogate in any string or key, at any depth', () => {
    expect(bodyTextProblem({ title: 'a\u0000b' })).toBe('a NUL character');
    expect(bodyTextProblem({ ['k\u0000']: 1 })).toBe('a NUL character');
    expect(bodyTextProblem([1, [2, ['\ud800']]])).toBe('a lone UTF-16 surrogate');
    expect(bodyTextProblem({ a: { b: '\udfff' } })).toBe('a lone UTF-16 surrogate');
    expect(bodyTextProblem({ title: 'café 🦀', n: 1, ok: true, none: null, list: ['x'] })).toBeNull();
    expect(bodyTextProblem('plain text')).toBeNull();
    // deeper than any call stack: walked without recursion
    let deep: unknown = '\u0000';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(bodyTextProblem(deep)).toBe('a NUL character');
  });
});
