// ui/api.js — the console's one way to tcld: its public HTTP API under /v1, on this origin, with
// the bearer token the user typed. The token lives in sessionStorage (this tab, until it closes),
// never in a URL, a cookie or localStorage.

const KEY = 'tcl.token';

export function token() {
  return sessionStorage.getItem(KEY);
}
export function setToken(t) {
  sessionStorage.setItem(KEY, t);
}
export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// GET `path` (an API path such as /v1/models) as JSON. Throws ApiError with tcld's error message.
export async function get(path) {
  const res = await fetch(path, {
    headers: { Authorization: `Bearer ${token() ?? ''}`, Accept: 'application/json' },
    cache: 'no-store',
    credentials: 'omit',
    redirect: 'error',
  });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) {
    const e = body?.error;
    throw new ApiError(res.status, e?.code ?? String(res.status), e?.message ?? `${path}: HTTP ${res.status}`);
  }
  return body;
}

// Path segment of a platform name or alias (they are checked by tcld; encoded all the same).
export function seg(s) {
  return encodeURIComponent(String(s));
}
