import { describe, expect, it } from 'vitest';
import { clientAddress, inCidr, parseCidr, parseCidrList, parseIp, sourceKey } from './client-address.js';

const key = (peer: string | null, xff: string | null = null, proxies = '') =>
  sourceKey(clientAddress(peer, xff, parseCidrList(proxies).cidrs));

describe('client addresses', () => {
  it('parses IPv4 and IPv6 (compressed, embedded IPv4, zones, brackets) and refuses the rest', () => {
    expect(parseIp('192.0.2.1')).toEqual([192, 0, 2, 1]);
    expect(parseIp('::ffff:192.0.2.1')).toEqual([192, 0, 2, 1]);
    expect(parseIp('[2001:db8::1]')).toEqual([0x20, 0x01, 0x0d, 0xb8, ...Array(11).fill(0), 1]);
    expect(parseIp('fe80::1%eth0')).toEqual([0xfe, 0x80, ...Array(13).fill(0), 1]);
    expect(parseIp('::')).toEqual(Array(16).fill(0));
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.256',
      '01.2.3.4',
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '12345::',
      'example.org',
      '1.2.3.4/8',
      ':::',
    ])
      expect(parseIp(bad)).toBeNull();
  });

  it('counts IPv4 by /32 and IPv6 by /64; an IPv4-mapped peer is its IPv4 address', () => {
    expect(key('192.0.2.1')).toBe('4:192.0.2.1');
    expect(key('::ffff:192.0.2.1')).toBe('4:192.0.2.1');
    expect(key('192.0.2.2')).not.toBe(key('192.0.2.1'));
    expect(key('2001:db8:1:2:aaaa::1')).toBe(key('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(key('2001:db8:1:3::1')).not.toBe(key('2001:db8:1:2::1'));
    expect(key(null)).toBe('unknown');
    expect(key('not an address')).toBe('unknown');
  });

  it('parses CIDRs for SVC_TRUSTED_PROXIES and names the malformed entries', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ bytes: [10, 0, 0, 0], prefix: 8 });
    expect(parseCidr('10.1.2.3')).toEqual({ bytes: [10, 1, 2, 3], prefix: 32 });
    expect(parseCidr('fd00::/8')?.prefix).toBe(8);
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual({ bytes: [10, 0, 0, 0], prefix: 8 });
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0.0/', '10.0.0.0/x', 'proxy.example', '10.0.0.0/-1'])
      expect(parseCidr(bad)).toBeNull();
    expect(parseCidrList(' 10.0.0.0/8, 192.168.1.1 fd00::/8 ,')).toEqual({
      cidrs: [parseCidr('10.0.0.0/8'), parseCidr('192.168.1.1'), parseCidr('fd00::/8')],
      malformed: [],
    });
    expect(parseCidrList('10.0.0.0/8,nope,1.2.3.4/40').malformed).toEqual(['nope', '1.2.3.4/40']);
    expect(parseCidrList('').cidrs).toEqual([]);
    expect(inCidr([10, 200, 3, 4], parseCidr('10.0.0.0/8')!)).toBe(true);
    expect(inCidr([11, 0, 0, 0], parseCidr('10.0.0.0/8')!)).toBe(false);
    expect(inCidr([10, 0, 0, 1], parseCidr('10.0.0.0/31')!)).toBe(true);
    expect(inCidr([10, 0, 0, 2], parseCidr('10.0.0.0/31')!)).toBe(false);
    expect(inCidr(parseIp('::1')!, parseCidr('10.0.0.0/8')!)).toBe(false);
  });

  it('believes X-Forwarded-For only from a trusted peer, and takes the nearest entry that is not itself a trusted proxy', () => {
    // No proxies configured: the header is ignored whatever it says.
    expect(key('203.0.113.9', '198.51.100.1')).toBe('4:203.0.113.9');
    // An untrusted peer cannot name a client.
    expect(key('203.0.113.9', '198.51.100.1', '10.0.0.0/8')).toBe('4:203.0.113.9');
    // A trusted peer: the rightmost entry that is not a proxy; what the client wrote further left is ignored.
    expect(key('10.0.0.2', '6.6.6.6, 198.51.100.1', '10.0.0.0/8')).toBe('4:198.51.100.1');
    expect(key('10.0.0.2', '6.6.6.6, 198.51.100.1, 10.0.0.7', '10.0.0.0/8')).toBe('4:198.51.100.1');
    expect(key('10.0.0.2', '2001:db8:5:6::9', '10.0.0.0/8')).toBe(key('2001:db8:5:6::1'));
    // Only proxies listed, or a malformed hop: the last trusted hop is the client.
    expect(key('10.0.0.2', '10.0.0.5, 10.0.0.7', '10.0.0.0/8')).toBe('4:10.0.0.5');
    expect(key('10.0.0.2', '198.51.100.1, garbage', '10.0.0.0/8')).toBe('4:10.0.0.2');
    // A trusted peer without the header is itself the client.
    expect(key('10.0.0.2', null, '10.0.0.0/8')).toBe('4:10.0.0.2');
  });
});
