import { api, register, VERSION, type Load } from './lib.js';
import { body as uploadBody, uploader, uploadsManyAccounts, uploadsOneAccount } from './uploads.js';
import { syncFromCursor, syncFromScratch } from './sync.js';

/** One workload against a running server: `setup` prepares it, the runner measures `load`. */
export interface Scenario {
  name: string;
  /** Whether a warm-up run may precede measuring (not where each request adds lasting state). */
  warm: boolean;
  setup(url: string, ctx?: ScenarioContext): Promise<{ load: Load; after?: () => Promise<string> }>;
}

/** What a mode hands the scenarios: the growth mode's hot account (its upload sessions are seeded). */
export interface ScenarioContext {
  hotToken?: string;
}

export const profileGet: Scenario = {
  name: 'GET /v1/auth/profile (authenticated)',
  warm: true,
  async setup(url) {
    const u = await register(url, `bench-profile-${Date.now()}@example.org`);
    return {
      load: {
        url: `${url}/v1/auth/profile`,
        headers: { authorization: `Bearer ${u.access_token}`, 'x-svc-protocol': VERSION },
      },
      // The figure only counts if revocation still bites on the very next request.
      async after() {
        const revoke = await api(url, 'DELETE', `/v1/auth/sessions/${u.session_id}`, undefined, u.access_token);
        const next = await api(url, 'GET', '/v1/auth/profile', undefined, u.access_token);
        if (revoke.status !== 204 || next.status !== 401)
          throw new Error(`revocation did not bite: ${revoke.status} then ${next.status}`);
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

/**
 * The mixed load: in every 20 requests of a connection, 18 profile reads, one refresh and one
 * upload-session creation (the load generator walks the list in order on each connection). Three accounts,
 * so a refresh never touches the token the reads carry.
 */
export const mixed: Scenario = {
  name: 'mixed: 90 % GET profile, 5 % refresh, 5 % upload',
  warm: false,
  async setup(url) {
    const stamp = Date.now();
    const reader = await register(url, `bench-mixed-read-${stamp}@example.org`);
    const refresher = await register(url, `bench-mixed-refresh-${stamp}@example.org`);
    const uploadToken = await uploader(url, `bench-mixed-upload-${stamp}`);
    const get = {
      method: 'GET',
      path: '/v1/auth/profile',
      headers: { authorization: `Bearer ${reader.access_token}`, 'x-svc-protocol': VERSION },
    };
    const refreshRequest = {
      method: 'POST',
      path: '/v1/auth/refresh',
      headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
      body: JSON.stringify({ session_token: refresher.session_token }),
    };
    const upload = {
      method: 'POST',
      path: '/upload',
      headers: {
        'content-type': 'application/json',
        'x-svc-protocol': VERSION,
        authorization: `Bearer ${uploadToken}`,
      },
      body: uploadBody,
    };
    const requests = [
      ...Array.from({ length: 9 }, () => get),
      refreshRequest,
      ...Array.from({ length: 9 }, () => get),
      upload,
    ];
    return { load: { url: `${url}/v1/auth/profile`, connections: 20, requests } };
  },
};

export const SCENARIOS: Scenario[] = [
  profileGet,
  refresh,
  uploadsOneAccount,
  uploadsManyAccounts,
  mixed,
  syncFromScratch,
  syncFromCursor,
];

/** The scenario whose name contains `words` (any case), as the one-scenario benches take it on their command line. */
export function scenarioMatching(words: string): Scenario {
  const scenario = SCENARIOS.find((s) => s.name.toLowerCase().includes(words.toLowerCase()));
  if (!scenario) throw new Error(`no scenario matches "${words}": ${SCENARIOS.map((s) => s.name).join(' | ')}`);
  return scenario;
}
