/** The capability vocabulary shared by passports, agents and tasks (SPEC section 2). */
export const CAPABILITIES = ['api_call', 'payment', 'data_provide', 'data_consume', 'orchestration'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export function isCapability(value: string): value is Capability {
  return (CAPABILITIES as readonly string[]).includes(value);
}
