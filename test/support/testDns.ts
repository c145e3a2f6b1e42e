/**
 * A DNS server on a loopback UDP port (dns2) for the trust tests: A/AAAA and TXT records the test
 * sets and changes while it runs. Point the service at it with TRUST_DNS_SERVERS=`server.address`.
 * Names not set answer with no records (NOERROR, empty: the resolver reports ENODATA/ENOTFOUND).
 */
import dns2 from 'dns2';

const { Packet } = dns2;

export interface TestDnsServer {
  /** "127.0.0.1:port", the value of TRUST_DNS_SERVERS */
  address: string;
  /** replaces the A records of a name (lower case, no trailing dot) */
  setA(name: string, addresses: string[]): void;
  /** replaces the TXT records of a name; each record is one string */
  setTxt(name: string, values: string[]): void;
  /** removes every record of a name */
  clear(name: string): void;
  /** how many queries it answered for a name */
  queries(name: string): number;
  /** every name it was asked about, with its query count (a copy) */
  queried(): Map<string, number>;
  close(): Promise<void>;
}

export async function startTestDns(): Promise<TestDnsServer> {
  const a = new Map<string, string[]>();
  const txt = new Map<string, string[]>();
  const counts = new Map<string, number>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      for (const q of request.questions) {
        const name = q.name.toLowerCase().replace(/\.$/, '');
        counts.set(name, (counts.get(name) ?? 0) + 1);
        if (q.type === Packet.TYPE.A) {
          for (const address of a.get(name) ?? []) response.answers.push(Packet.createResourceFromQuestion(q, { type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 1, address }));
        } else if (q.type === Packet.TYPE.TXT) {
          for (const data of txt.get(name) ?? []) response.answers.push(Packet.createResourceFromQuestion(q, { type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 1, data }));
        }
      }
      send(response);
    },
  });
  await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const { port } = server.addresses().udp as { port: number };
  return {
    address: `127.0.0.1:${port}`,
    setA: (name, addresses) => void a.set(name.toLowerCase(), addresses),
    setTxt: (name, values) => void txt.set(name.toLowerCase(), values),
    clear: (name) => {
      a.delete(name.toLowerCase());
      txt.delete(name.toLowerCase());
    },
    queries: (name) => counts.get(name.toLowerCase()) ?? 0,
    queried: () => new Map(counts),
    close: async () => {
      await server.close();
    },
  };
}
