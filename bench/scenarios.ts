import { api, measure, register, VERSION, type Figures } from './lib.js';
import { uploadsManyAccounts, uploadsOneAccount } from './uploads.js';

/** One measured workload against a running server. Areas add theirs to SCENARIOS. */
export interface Scenario {
  name: string;
  run(url: string): Promise<Figures & { note?: string }>;
}

export const profileGet: Scenario = {
  name: 'GET /v1/auth/profile (authenticated)',
  async run(url) {
    const u = await register(url, `bench-profile-${Date.now()}@example.org`);
    const figures = await measure({ url: `${url}/v1/auth/profile`, headers: { authorization: `Bearer ${u.access_token}`, 'x-svc-protocol': VERSION } });
    // The figure only counts if revocation still bites on the very next request.
    const revoke = await api(url, 'DELETE', `/v1/auth/sessions/${u.session_id}`, undefined, u.access_token);
    const after = await api(url, 'GET', '/v1/auth/profile', undefined, u.access_token);
    if (revoke.status !== 204 || after.status !== 401) throw new Error(`revocation did not bite: ${revoke.status} then ${after.status}`);
    return { ...figures, note: 'revoked token refused on next request: yes' };
  },
};

export const refresh: Scenario = {
  name: 'POST /v1/auth/refresh',
  async run(url) {
    const u = await register(url, `bench-refresh-${Date.now()}@example.org`);
    return measure({
      url: `${url}/v1/auth/refresh`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
      body: JSON.stringify({ session_token: u.session_token }),
    });
  },
};

export const SCENARIOS: Scenario[] = [profileGet, refresh, uploadsOneAccount, uploadsManyAccounts];
