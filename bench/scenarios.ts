import { api, register, VERSION, type Load } from './lib.js';
import { uploadsManyAccounts, uploadsOneAccount } from './uploads.js';

/** One workload against a running server: `setup` prepares it, the runner measures `load`. */
export interface Scenario {
  name: string;
  /** Whether a warm-up run may precede measuring (not where each request adds lasting state). */
  warm: boolean;
  setup(url: string): Promise<{ load: Load; after?: () => Promise<string> }>;
}

export const profileGet: Scenario = {
  name: 'GET /v1/auth/profile (authenticated)',
  warm: true,
  async setup(url) {
    const u = await register(url, `bench-profile-${Date.now()}@example.org`);
    return {
      load: { url: `${url}/v1/auth/profile`, headers: { authorization: `Bearer ${u.access_token}`, 'x-svc-protocol': VERSION } },
      // The figure only counts if revocation still bites on the very next request.
      async after() {
        const revoke = await api(url, 'DELETE', `/v1/auth/sessions/${u.session_id}`, undefined, u.access_token);
        const next = await api(url, 'GET', '/v1/auth/profile', undefined, u.access_token);
        if (revoke.status !== 204 || next.status !== 401) throw new Error(`revocation did not bite: ${revoke.status} then ${next.status}`);
        return 'revoked token refused on next request: yes';
      },
    };
  },
};

export const refresh: Scenario = {
  name: 'POST /v1/auth/refresh',
  warm: true,
  async setup(url) {
    const u = await register(url, `bench-refresh-${Date.now()}@example.org`);
    return {
      load: {
        url: `${url}/v1/auth/refresh`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
        body: JSON.stringify({ session_token: u.session_token }),
      },
    };
  },
};

export const SCENARIOS: Scenario[] = [profileGet, refresh, uploadsOneAccount, uploadsManyAccounts];
