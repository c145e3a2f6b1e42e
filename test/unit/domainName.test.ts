import { describe, expect, it } from 'vitest';
import { ownershipDnsName, ownershipDnsRecord, ownershipTokenDigest, ownershipTxtValue, ownershipWellKnownUrl, parseDomainName } from '../../domain/domainName.js';

describe('parseDomainName (the {domain} of every trust route)', () => {
  it.each([
    ['example.com', 'example.com'],
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['sub.a-b.example.co.uk', 'sub.a-b.example.co.uk'],
    ['bücher.de', 'xn--bcher-kva.de'],
    ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
    ['123.example', '123.example'],
  ])('accepts %s as %s', (input, domain) => {
    expect(parseDomainName(input)).toEqual({ ok: true, domain });
  });

  it.each([
    // IP literals in every form the URL parser reads as an address
    '127.0.0.1', '10.0.0.1', '169.254.169.254', '2852039166', '0xA9FEA9FE', '0251.0376.0251.0376', '127.1', '[::1]', '[::ffff:169.254.169.254]', '::1',
    // ports, paths, user info, query, spaces
    'example.com:443', 'example.com/path', 'user@example.com', 'example.com?x', 'exa mple.com', 'example.com#x', 'example.com%2F',
    // label rules
    'localhost', 'a..b', '-a.com', 'a-.com', '_dmarc.example.com', 'a_b.com', 'x.123', `${'a'.repeat(64)}.com`, `${'a.'.repeat(127)}com`, '', '.',
  ])('refuses %j', (input) => {
    const r = parseDomainName(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason.length).toBeGreaterThan(0);
  });

  it('names the ownership DNS record and well-known URL of DESIGN.md section 6', () => {
    expect(ownershipDnsName('example.com')).toBe('_agent-passport.example.com');
    expect(ownershipTxtValue('tok')).toBe('agent-passport-verification=tok');
    expect(ownershipDnsRecord('example.com', 'tok')).toBe('_agent-passport.example.com. TXT "agent-passport-verification=tok"');
    expect(ownershipWellKnownUrl('example.com')).toBe('https://example.com/.well-known/agent-passport-challenge.txt');
  });

  it('a challenge issued without a DID publishes base64url(sha256(token)), not the token', () => {
    // sha256("abc"), the FIPS 180-2 test vector, in unpadded base64url
    expect(ownershipTokenDigest('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
    const token = 'x'.repeat(43);
    expect(ownershipTokenDigest(token)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ownershipTokenDigest(token)).not.toContain(token);
  });
});
