// The public API as the console calls it: the session's state (token,
// caller, organizations), one function per call shape (`api`), query
// strings, and the Idempotency-Key a create sends.

const TOKEN_KEY = "proxydeck.token";

const PAGE_SIZE = 20;

const state = {
  token: null,
  me: null,
  organizations: null, // Map id -> organization, once loaded
  view: null, // the AbortController of the view on screen
  invitation: null, // an invitation's secret, taken from the address (#/accept)
};

class ApiError extends Error {
  constructor(status, body, requestId, retryAfter) {
    super(body?.error?.message || `HTTP ${status}`);
    this.status = status;
    this.body = body;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
  }
}

/** One call of the public API with the session's token (none when
 * `anonymous`). Answers the JSON body and the ETag; throws ApiError on a
 * refusal or a network failure. */
async function api(method, path, { body, signal, headers = {}, anonymous = false } = {}) {
  const init = {
    method,
    signal,
    cache: "no-store",
    credentials: "omit",
    headers: { Accept: "application/json", ...(anonymous ? {} : { Authorization: `Bearer ${state.token}` }), ...headers },
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, null, null, null);
  }
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!response.ok) {
    throw new ApiError(
      response.status,
      json,
      response.headers.get("x-request-id"),
      response.headers.get("retry-after"),
    );
  }
  return { body: json, etag: response.headers.get("etag") };
}

const query = (params) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(name, value);
  }
  return search.toString();
};

/** The caller's role in an organization, from getMe. */
const roleIn = (organizationId) => state.me?.roles?.[organizationId] || "none";

/** A new Idempotency-Key (128 random bits; getRandomValues works on a
 * plain-HTTP address too, unlike randomUUID). */
function newIdempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The Idempotency-Key of a create from `form` with `body`: the same key
 * while the same body is sent again (a retry after no answer replays the
 * first answer instead of creating twice), a new one for another body. */
const createKeys = new WeakMap();

function idempotencyKeyFor(form, body) {
  const sent = JSON.stringify(body);
  const kept = createKeys.get(form);
  if (kept && kept.sent === sent) return kept.key;
  const key = newIdempotencyKey();
  createKeys.set(form, { sent, key });
  return key;
}

export { api, ApiError, createKeys, idempotencyKeyFor, PAGE_SIZE, query, roleIn, state, TOKEN_KEY };
