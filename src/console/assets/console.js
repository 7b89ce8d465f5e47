// The proxydeck console: a client of the public API (/v1/...) and nothing
// else. Every read and every change is a request with the signed-in
// person's token, so roles, conflicts and limits are the API's own.
//
// Safety rules this file keeps (a unit test checks the first ones):
// - text from the API only ever becomes DOM text (textContent, append of
//   a string), never markup: nothing here parses a string as HTML;
// - the token lives in this tab's session storage and in memory, never in
//   a URL, a cookie or a log line; routes hold ids and page keys only.

const TOKEN_KEY = "proxydeck.token";
const PAGE_SIZE = 20;
// A slug search walks the caller's projects a page of 100 at a time;
// beyond this many pages it stops and asks to narrow by organization.
const FIND_PAGES = 50;
// Organizations read for names and the filter: up to 10 pages of 100.
const ORGANIZATION_PAGES = 10;

const state = {
  token: null,
  me: null,
  organizations: null, // Map id -> organization, once loaded
  view: null, // the AbortController of the view on screen
  invitation: null, // an invitation's secret, taken from the address (#/accept)
};

// ----- The DOM, built from parts (never from markup strings) -----

/** An element: `attrs` are attributes ("class", "text" and on* handlers
 * are special), `children` are nodes or strings (strings become text). */
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "class") element.className = value;
    else if (name === "text") element.textContent = value;
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

const $ = (id) => document.getElementById(id);
const main = () => $("main");

/** Puts `nodes` on screen as the view, focusing its heading so keyboard
 * and screen-reader users start there. */
function show(...nodes) {
  const area = main();
  area.replaceChildren(...nodes.flat().filter((node) => node !== null && node !== undefined));
  area.removeAttribute("aria-busy");
  const heading = area.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
}

function loading(what) {
  main().setAttribute("aria-busy", "true");
  main().replaceChildren(h("p", { class: "loading", role: "status", text: `Loading ${what}…` }));
}

/** A short message under the header (for example "Revision 3 is now active."). */
function notify(text) {
  const notice = $("notice");
  notice.textContent = text;
  notice.hidden = !text;
}

function when(timestamp) {
  if (!timestamp) return h("span", { class: "muted", text: "never" });
  const text = `${timestamp.slice(0, 10)} ${timestamp.slice(11, 16)} UTC`;
  return h("time", { datetime: timestamp, title: timestamp, text });
}

const yesNo = (flag) => (flag ? "Yes" : "No");

// ----- The API -----

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

/** What went wrong, in words a person reads; `action` says what was tried
 * ("activate a revision"), `organizationId` where. */
function explain(error, action, organizationId) {
  const said = error.body?.error?.message;
  switch (error.status) {
    case 0:
      return "The service did not answer. Check that it runs and that you are connected, then try again.";
    case 400: {
      const params = error.body?.error?.params || [];
      const details = params.map((p) => `${p.param}: ${p.message}`).join("; ");
      return `The service refused the request as invalid: ${details || said}`;
    }
    case 401:
      return "Your token is no longer accepted (revoked or expired). Sign in again.";
    case 403: {
      const organization = state.organizations?.get(organizationId)?.name || "this organization";
      return `You may not ${action}: your role in ${organization} is ${roleIn(organizationId)}. Only editors and admins may.`;
    }
    case 404:
      return "Not found: it does not exist, or it is not visible to you.";
    case 409:
      return `Conflict: ${said}`;
    case 412:
      return "Someone changed this since you loaded it, so nothing was changed. Reload to see the change, then try again.";
    case 429:
      return `Too many requests for now. Try again in ${error.retryAfter || "a few"} seconds.`;
    default:
      return `The service had a problem and changed nothing${error.requestId ? ` (request id ${error.requestId})` : ""}. Try again shortly.`;
  }
}

/** A 401 in the middle of a session: the token was revoked or expired. */
function endSessionOn(error) {
  if (error.status === 401) {
    forgetToken();
    showSignIn(explain(error));
    return true;
  }
  return false;
}

function errorBox(text) {
  return h("div", { class: "error", role: "alert" }, h("strong", { text: "Not done. " }), text);
}

/** A view that could not load: what went wrong and a way to try again. */
function failed(title, error) {
  if (endSessionOn(error)) return;
  show(
    h("h1", { text: title }),
    errorBox(explain(error, "see this")),
    h("p", {}, h("button", { type: "button", onclick: route, text: "Try again" })),
  );
}

// ----- Confirmation -----

/** Asks before a change; answers whether the person confirmed. */
function confirmAction(title, text, confirmLabel) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

// ----- Signing in and out -----

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  state.me = null;
  state.organizations = null;
  $("nav").hidden = true;
  $("who").hidden = true;
  $("who-name").textContent = "";
}

function showSignIn(message) {
  state.view?.abort();
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "token-help",
  });
  const problem = h("div", { id: "sign-in-problem" });
  if (message) problem.append(errorBox(message));
  const form = h(
    "form",
    { class: "card sign-in", method: "post", onsubmit: (event) => signIn(event, input, problem) },
    h("label", { for: "token", text: "API token" }),
    input,
    h(
      "p",
      { id: "token-help", class: "muted" },
      "A token made with `proxydeck admin token create` or in this console. It stays in this tab only and is forgotten when you sign out or close the tab.",
    ),
    h("button", { type: "submit", class: "primary", text: "Sign in" }),
  );
  show(h("h1", { text: "Sign in" }), problem, form);
  input.focus();
}

async function signIn(event, input, problem) {
  event.preventDefault();
  const token = input.value.trim();
  input.value = "";
  problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Checking the token…" }));
  state.token = token;
  try {
    const { body } = await api("GET", "/v1/users/me");
    sessionStorage.setItem(TOKEN_KEY, token);
    signedIn(body);
    notify("");
    if (!location.hash || location.hash === "#/" || location.hash === "#") {
      history.replaceState(null, "", "#/projects");
    }
    route();
  } catch (error) {
    state.token = null;
    problem.replaceChildren(
      errorBox(error.status === 401 ? "That token was not accepted. Check that it was copied whole and is not revoked or expired." : explain(error)),
    );
    input.focus();
  }
}

function signedIn(me) {
  state.me = me;
  $("who-name").textContent = `${me.name} (${me.email})`;
  $("nav").hidden = false;
  $("who").hidden = false;
}

function signOut() {
  forgetToken();
  history.replaceState(null, "", "#/");
  notify("Signed out: this tab has forgotten the token.");
  showSignIn();
}

// ----- Organizations (names and the filter) -----

async function loadOrganizations(signal) {
  if (state.organizations) return state.organizations;
  const organizations = new Map();
  let start = null;
  for (let page = 0; page < ORGANIZATION_PAGES; page++) {
    const { body } = await api("GET", `/v1/organizations?${query({ limit: 100, order_direction: "ASC", start_key: start })}`, { signal });
    for (const organization of body.data) organizations.set(organization.id, organization);
    if (!body.has_more) break;
    start = body.last_key;
  }
  state.organizations = organizations;
  return organizations;
}

const organizationName = (id) => state.organizations?.get(id)?.name || id;

// ----- Navigation -----

/** Goes to `hash`, keeping `trail` (the keys of the pages before) with the
 * history entry, so Back and Forward keep the page count right. */
function go(hash, trail = []) {
  history.pushState({ trail }, "", hash);
  route();
}

const trail = () => history.state?.trail || [];

function hashParams() {
  const [path, search = ""] = location.hash.slice(1).split("?");
  return { path, params: new URLSearchParams(search) };
}

const ROUTES = [
  [/^\/projects\/([^/]+)\/diff\/(\d+)\/(\d+)$/, viewDiff],
  [/^\/projects\/([^/]+)$/, viewProject],
  [/^\/projects$/, viewProjects],
  [/^\/tokens$/, viewTokens],
  [/^\/organizations\/([^/]+)$/, viewOrganization],
  [/^\/organizations$/, viewOrganizations],
];

function route() {
  takeInvitationFromAddress();
  if (hashParams().path === "/accept") {
    // Reachable signed out: the invitation may make the account.
    state.view?.abort();
    state.view = null;
    viewAccept();
    return;
  }
  if (!state.token) {
    showSignIn();
    return;
  }
  state.view?.abort();
  const controller = new AbortController();
  state.view = controller;
  const { path, params } = hashParams();
  for (const link of document.querySelectorAll("[data-nav]")) {
    const current = path.startsWith(`/${link.dataset.nav}`);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, view] of ROUTES) {
    const match = pattern.exec(path);
    if (match) {
      const parts = match.slice(1).map(decodeURIComponent);
      view(parts, params, controller.signal).catch((error) => {
        if (error.name !== "AbortError") failed("Something went wrong", error);
      });
      return;
    }
  }
  history.replaceState(null, "", "#/projects");
  route();
}

/** Previous and Next through an API listing by its own cursors: Next
 * follows the page's last key, Previous goes back along the trail. */
function pager(label, start, nextKey, hashFor) {
  const before = trail();
  const previous = h("button", {
    type: "button",
    disabled: !start,
    text: "← Previous",
    onclick: () => {
      const back = before.slice(0, -1);
      go(hashFor(before.at(-1) || ""), back);
    },
  });
  const next = h("button", {
    type: "button",
    disabled: !nextKey,
    text: "Next →",
    onclick: () => go(hashFor(nextKey), [...before, start]),
  });
  return h("nav", { class: "pager", "aria-label": label }, previous, h("span", { text: `Page ${before.length + 1}` }), next);
}

// ----- Projects -----

async function viewProjects(_, params, signal) {
  const organization = params.get("organization_id") || "";
  const order = params.get("order_direction") === "ASC" ? "ASC" : "DESC";
  const start = params.get("start_key") || "";
  loading("projects");
  await loadOrganizations(signal);
  const { body } = await api(
    "GET",
    `/v1/projects?${query({ limit: PAGE_SIZE, order_direction: order, organization_id: organization, start_key: start })}`,
    { signal },
  );
  const hashFor = (key) => `#/projects?${query({ organization_id: organization, order_direction: order === "ASC" ? "ASC" : "", start_key: key })}`;

  const organizationSelect = h(
    "select",
    { id: "filter-organization", name: "organization_id" },
    h("option", { value: "", text: "All my organizations" }),
    [...state.organizations.values()].map((o) =>
      h("option", { value: o.id, selected: o.id === organization, text: `${o.name} (${roleIn(o.id)})` }),
    ),
  );
  const orderSelect = h(
    "select",
    { id: "filter-order", name: "order_direction" },
    h("option", { value: "DESC", selected: order === "DESC", text: "Newest first" }),
    h("option", { value: "ASC", selected: order === "ASC", text: "Oldest first" }),
  );
  const filter = h(
    "form",
    {
      class: "toolbar",
      "aria-label": "Filter projects",
      onsubmit: (event) => {
        event.preventDefault();
        go(`#/projects?${query({ organization_id: organizationSelect.value, order_direction: orderSelect.value === "ASC" ? "ASC" : "" })}`);
      },
    },
    h("label", { for: "filter-organization", text: "Organization" }),
    organizationSelect,
    h("label", { for: "filter-order", text: "Order" }),
    orderSelect,
    h("button", { type: "submit", text: "Apply" }),
  );

  const slugInput = h("input", { id: "find-slug", name: "slug", type: "search", required: true, autocomplete: "off", pattern: "[a-z0-9-]{1,63}", title: "a-z, 0-9 and -" });
  const findResult = h("div", { id: "find-result" });
  const find = h(
    "form",
    {
      class: "toolbar",
      role: "search",
      onsubmit: (event) => findBySlug(event, slugInput.value.trim(), organization, findResult, signal),
    },
    h("label", { for: "find-slug", text: "Find by slug" }),
    slugInput,
    h("button", { type: "submit", text: "Find" }),
  );

  const rows = body.data.map((project) =>
    h(
      "tr",
      {},
      h("td", { "data-label": "Slug" }, h("a", { href: `#/projects/${encodeURIComponent(project.id)}`, text: project.slug })),
      h("td", { "data-label": "Organization", text: organizationName(project.organization_id) }),
      h("td", { "data-label": "Type", text: project.type }),
      h("td", { "data-label": "Description", class: "description", text: project.description || "—" }),
      h("td", { "data-label": "Created" }, when(project.created_at)),
    ),
  );
  const table = rows.length
    ? h(
        "table",
        { class: "list", id: "projects" },
        h("caption", { class: "visually-hidden", text: "Projects" }),
        h("thead", {}, h("tr", {}, ["Slug", "Organization", "Type", "Description", "Created"].map((name) => h("th", { scope: "col", text: name })))),
        h("tbody", {}, rows),
      )
    : h("p", { class: "empty", text: start ? "No more projects." : "No projects here yet." });
  show(
    h("h1", { text: "Projects" }),
    state.organizations.size
      ? null
      : h("p", { class: "notice-inline", id: "no-organization" }, "You are in no organization yet: ", h("a", { href: "#/organizations", text: "create one" }), ", or open the link of an invitation."),
    filter,
    find,
    findResult,
    table,
    pager("Pages of projects", start, body.has_more ? body.last_key : "", hashFor),
  );
}

/** Finds a project by its slug: the id first (the slug often is one),
 * then the caller's projects a page at a time, at most FIND_PAGES pages. */
async function findBySlug(event, slug, organization, out, signal) {
  event.preventDefault();
  out.replaceChildren(h("p", { class: "loading", role: "status", text: `Looking for ${slug}…` }));
  try {
    try {
      const { body } = await api("GET", `/v1/projects/${encodeURIComponent(slug)}`, { signal });
      if (body.slug === slug && (!organization || body.organization_id === organization)) {
        go(`#/projects/${encodeURIComponent(body.id)}`);
        return;
      }
    } catch (error) {
      if (error.status !== 404 && error.status !== 400) throw error;
    }
    let start = "";
    let seen = 0;
    for (let page = 0; page < FIND_PAGES; page++) {
      const { body } = await api("GET", `/v1/projects?${query({ limit: 100, organization_id: organization, start_key: start })}`, { signal });
      const found = body.data.find((project) => project.slug === slug);
      if (found) {
        go(`#/projects/${encodeURIComponent(found.id)}`);
        return;
      }
      seen += body.data.length;
      out.replaceChildren(h("p", { class: "loading", role: "status", text: `Looking for ${slug}… ${seen} projects read.` }));
      if (!body.has_more) {
        out.replaceChildren(errorBox(`No project has the slug ${slug} in ${organization ? organizationName(organization) : "your organizations"}.`));
        return;
      }
      start = body.last_key;
    }
    out.replaceChildren(errorBox(`Not found among the newest ${seen} projects. Choose an organization to narrow the search.`));
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    out.replaceChildren(errorBox(explain(error, "search projects")));
  }
}

// ----- One project -----

/** A labelled list of settings: [label, value] pairs; a value is text,
 * a node, or a list (shown one item a line, or "none"). */
function settings(id, title, pairs) {
  const list = h("dl", { class: "settings" });
  for (const [label, value] of pairs) {
    let shown = value;
    if (Array.isArray(value)) {
      shown = value.length ? h("ul", { class: "plain" }, value.map((item) => h("li", {}, item))) : h("span", { class: "muted", text: "none" });
    } else if (value === "" || value === null || value === undefined) {
      shown = h("span", { class: "muted", text: "not set" });
    }
    list.append(h("dt", { text: label }), h("dd", {}, shown));
  }
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id, text: title }), list);
}

/** A rule's conditions in words: "request methods GET, HEAD; request
 * headers present: accept". Empty conditions read "always". */
function conditionsText(conditions) {
  const parts = [];
  for (const [name, value] of Object.entries(conditions || {})) {
    const label = name.replaceAll("_", " ");
    if (Array.isArray(value)) {
      if (value.length) parts.push(`${label} ${value.join(", ")}`);
    } else if (value && typeof value === "object") {
      const { present = [], absent = [], values = {} } = value;
      if (present.length) parts.push(`${label} present: ${present.join(", ")}`);
      if (absent.length) parts.push(`${label} absent: ${absent.join(", ")}`);
      for (const [key, wanted] of Object.entries(values)) parts.push(`${label} ${key} = ${JSON.stringify(wanted)}`);
    } else if (value !== "" && value !== null && value !== undefined) {
      parts.push(`${label} ${value}`);
    }
  }
  return parts.join("; ") || "always";
}

async function viewProject([id], _, signal) {
  loading("the project");
  const [{ body: project }] = await Promise.all([
    api("GET", `/v1/projects/${encodeURIComponent(id)}`, { signal }),
    loadOrganizations(signal),
  ]);
  const a = project.autocapture || {};
  const sections = [
    settings("s-overview", "Overview", [
      ["Organization", organizationName(project.organization_id)],
      ["Your role there", roleIn(project.organization_id)],
      ["Id", project.id],
      ["Type", project.type],
      ["Description", project.description],
      ["External address", project.external_project_url],
      ["Avatar address", project.avatar_url],
      ["Log severity", project.log_severity],
      ["Created", when(project.created_at)],
      ["Updated", when(project.updated_at)],
    ]),
    settings("s-caching", "Caching", [
      ["Cache", yesNo(project.cache)],
      ["Behind a proxy cache", yesNo(project.edgee_behind_proxy_cache)],
      ["Enforce no-store policy", yesNo(project.enforce_no_store_policy)],
      ["Cache rules enabled", yesNo(project.override_cache_enabled)],
      [
        "Cache rules",
        (project.override_cache || []).map(
          (rule) => `#${rule.rank} ${rule.path}${rule.regex ? " (regex)" : ""}: ${rule.pass ? "pass" : `ttl ${rule.ttl} s, swr ${rule.swr} s`}; when ${conditionsText(rule.conditions)}`,
        ),
      ],
    ]),
    settings("s-proxying", "Proxying", [
      ["Force HTTPS", yesNo(project.force_https)],
      ["Proxy only", yesNo(project.proxy_only)],
      ["Proxy-only paths (regex)", project.proxy_only_path_regex],
      ["Password protection", yesNo(project.password_protection)],
      ["Forwarded headers", (project.forwarded_headers || []).map((header) => `${header.name}: ${header.value}`)],
    ]),
    settings("s-sdk", "SDK", [
      ["Inject the SDK", yesNo(project.inject_sdk)],
      ["Position", project.inject_sdk_position],
      ["Cookieless", yesNo(project.cookieless)],
      ["Autocapture", Object.keys(a).filter((name) => a[name]).map((name) => name.replaceAll("_", " "))],
    ]),
    settings("s-ip", "IP rules", [
      ["Trusted addresses", project.trusted_ips || []],
      ["Blocked addresses", project.blocked_ips || []],
    ]),
    settings("s-rate", "Rate limiting", [
      ["Enabled", yesNo(project.rate_limiting_enabled)],
      [
        "Rules",
        (project.rate_limiting || []).map(
          (rule) => `#${rule.rank} ${rule.limit} requests per ${rule.window} by ${(rule.key || []).join(", ")}, blocked ${rule.block_duration} s; when ${conditionsText(rule.conditions)}`,
        ),
      ],
    ]),
    settings("s-cookies", "Cookies", [
      ["Cookie name", project.cookie_name],
      ["Cookie domain", project.cookie_domain],
      ["Kept cookies", project.cookie_whitelist || []],
    ]),
  ];
  const domains = h("section", { class: "card wide", id: "domains", "aria-labelledby": "s-domains" }, h("h2", { id: "s-domains", text: "Domains" }));
  const revisions = h("section", { class: "card wide", id: "revisions", "aria-labelledby": "s-revisions" }, h("h2", { id: "s-revisions", text: "Proxy settings" }));
  show(
    h("p", { class: "crumbs" }, h("a", { href: "#/projects", text: "Projects" }), " / ", organizationName(project.organization_id)),
    h("h1", { text: project.slug }),
    h("div", { class: "grid" }, sections),
    domains,
    revisions,
  );
  await Promise.all([showDomains(project, domains, signal), showRevisions(project, revisions, signal)]);
}

// ----- Custom domains: where each one's DNS proof stands -----

const DOMAIN_STATUS = {
  verified: "✓ DNS verified",
  failing: "! DNS failing",
  pending: "DNS pending",
};

/** A project's domains (every page): each with its status, the record
 * that proves it, its last check and, for those who may change the
 * project (editors and admins, as with stale edges), "Check now",
 * "Remove" and the form that adds one. */
async function showDomains(project, section, signal) {
  const heading = section.querySelector("h2");
  section.replaceChildren(heading, h("p", { class: "loading", role: "status", text: "Loading domains…" }));
  const domains = [];
  try {
    let start = "";
    do {
      const { body } = await api("GET", `/v1/projects/${encodeURIComponent(project.id)}/domains?${query({ limit: 100, start_key: start })}`, { signal });
      domains.push(...body.data);
      start = body.has_more ? body.last_key : "";
    } while (start);
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    section.replaceChildren(heading, errorBox(explain(error, "see the domains")));
    return;
  }
  const mayChange = roleIn(project.organization_id) !== "member";
  const list = domains.length
    ? h("ul", { class: "domains", "aria-label": "Domains" }, domains.map((domain) => domainItem(project, domain, mayChange, section, signal)))
    : h("p", { class: "empty", text: "No domain yet: the project answers on no host name of its own." });
  const parts = [
    heading,
    h("p", { class: "muted", text: "A domain routes to this project once a DNS record proves it is yours; proxydeck looks for the record now and again, or at once with “Check now”." }),
    mayChange
      ? null
      : h("p", { class: "muted", text: `Your role in ${organizationName(project.organization_id)} is member: you can read the domains; adding, checking and removing one needs an editor or an admin.` }),
    list,
    mayChange ? addDomainForm(project, section, signal) : null,
  ];
  section.replaceChildren(...parts.filter((part) => part !== null));
}

/** One domain: its name and status in words, the record to create (with
 * Copy buttons), what the last check found, and its buttons. */
function domainItem(project, domain, mayChange, section, signal) {
  const v = domain.verification;
  const answer = h("div", { class: "check-answer", role: "status" });
  const copied = h("span", { class: "muted", role: "status" });
  const recordRow = (label, text) =>
    h("div", { class: "record-part" }, h("dt", { text: label }), h("dd", {}, h("code", { text }), copyButton({ "aria-label": `Copy the record's ${label.toLowerCase()}` }, () => text, copied)));
  const item = h(
    "li",
    { class: `domain ${v.status}`, "data-domain": domain.name },
    h(
      "div",
      { class: "domain-head" },
      h("strong", { text: domain.name }),
      h("span", { class: "badge dns", text: DOMAIN_STATUS[v.status] || v.status }),
      h("span", { class: "ssl", text: domain.ssl_status ? "SSL: certificate served" : "SSL: no certificate yet" }),
    ),
    h("p", { text: v.status === "pending" ? "Create this DNS record to prove you own it:" : "Keep this DNS record: the name stops routing some time after it is gone." }),
    h("dl", { class: "record" }, recordRow("Type", v.record.type), recordRow("Name", v.record.name), recordRow("Value", v.record.value)),
    copied,
    h("p", { class: "last-check" }, ...lastCheck(v)),
    mayChange
      ? h(
          "div",
          { class: "toolbar" },
          h("button", { type: "button", class: "check-now", text: "Check now", "aria-label": `Check ${domain.name} now`, onclick: () => checkDomain(project, domain, item, signal) }),
          h("button", { type: "button", class: "danger remove-domain", text: `Remove ${domain.name}`, onclick: () => removeDomain(project, domain, section, signal) }),
        )
      : null,
    answer,
  );
  return item;
}

/** What the last check found, and when the next one is. */
function lastCheck(v) {
  const parts = v.checked_at ? ["Last checked ", when(v.checked_at), `: ${v.message}.`] : ["Not checked yet."];
  if (v.status === "failing" && v.routes_until) parts.push(" It stops routing at ", when(v.routes_until), " unless the record is back by then.");
  if (v.next_check_at) parts.push(" Next check: ", when(v.next_check_at), ".");
  return parts;
}

/** What a check found, in the terminal's words (`proxydeck domains verify`). */
function checkSaid(project, domain) {
  const v = domain.verification;
  if (v.status === "verified") return `${domain.name} is verified: it routes to ${project.slug} (${v.message}).`;
  if (v.status === "failing") return `${domain.name} routes to ${project.slug}, but its record is missing (${v.message}).`;
  return `${domain.name} is not verified, so it does not route: ${v.message}.`;
}

/** "Check now": the API looks the record up at once and answers the
 * domain as it now stands, shown in place with what was found. */
async function checkDomain(project, domain, item, signal) {
  const answer = item.querySelector(".check-answer");
  answer.replaceChildren(h("p", { class: "loading", text: `Looking up the record of ${domain.name}…` }));
  try {
    const { body } = await api("POST", `/v1/projects/${encodeURIComponent(project.id)}/domains/${encodeURIComponent(domain.name)}`, { body: { dns_status: true }, signal });
    const fresh = domainItem(project, body, true, item.closest("section"), signal);
    fresh.querySelector(".check-answer").append(h("p", { text: checkSaid(project, body) }));
    item.replaceWith(fresh);
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    answer.replaceChildren(errorBox(explain(error, "check domains", project.organization_id)));
  }
}

function addDomainForm(project, section, signal) {
  const name = h("input", { id: "domain-name", name: "name", required: true, autocomplete: "off", spellcheck: "false", placeholder: "shop.example.com" });
  const problem = h("div", {});
  return h(
    "form",
    {
      class: "toolbar",
      "aria-label": "Add a domain",
      onsubmit: async (event) => {
        event.preventDefault();
        problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Adding…" }));
        try {
          const { body } = await api("POST", `/v1/projects/${encodeURIComponent(project.id)}/domains`, { body: { name: name.value.trim() }, signal });
          notify(`${body.name} was added to ${project.slug}: create its DNS record to prove it is yours.`);
          await showDomains(project, section, signal);
        } catch (error) {
          if (error.name === "AbortError" || endSessionOn(error)) return;
          problem.replaceChildren(errorBox(explain(error, "add domains", project.organization_id)));
        }
      },
    },
    h("label", { for: "domain-name", text: "Add domain" }),
    name,
    h("button", { type: "submit", class: "primary", text: "Add domain" }),
    problem,
  );
}

async function removeDomain(project, domain, section, signal) {
  const confirmed = await confirmAction(
    `Remove ${domain.name}?`,
    `${domain.name} stops routing to ${project.slug}. To use it again, add it again and prove it with a new DNS record.`,
    `Remove ${domain.name}`,
  );
  if (!confirmed) return;
  try {
    await api("DELETE", `/v1/projects/${encodeURIComponent(project.id)}/domains/${encodeURIComponent(domain.name)}`, { signal });
    notify(`${domain.name} was removed from ${project.slug}.`);
    await showDomains(project, section, signal);
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    notify(explain(error, "remove domains", project.organization_id));
  }
}

/** A Copy button (with `attrs`) for what `text()` answers; `said` tells
 * whether it was copied. `select`, when given, selects the text first, for those who
 * copy it by hand. */
function copyButton(attrs, text, said, select) {
  const copy = async () => {
    select?.();
    try {
      await navigator.clipboard.writeText(text());
      said.textContent = "Copied.";
    } catch {
      said.textContent = "Select the text and copy it (Ctrl+C or ⌘C).";
    }
  };
  return h("button", { type: "button", text: "Copy", ...attrs, onclick: copy });
}

// ----- Proxy settings: timeline, activation, diff -----

async function showRevisions(project, section, signal, loaded = [], nextKey = "") {
  const status = h("div", { class: "revision-status" });
  const heading = section.querySelector("h2");
  section.replaceChildren(heading, h("p", { class: "loading", role: "status", text: "Loading revisions…" }));
  let revisions = loaded;
  let more = nextKey;
  try {
    if (!loaded.length || nextKey) {
      const { body } = await api("GET", `/v1/projects/${encodeURIComponent(project.id)}/proxy-settings?${query({ limit: 100, start_key: nextKey })}`, { signal });
      revisions = [...loaded, ...body.data];
      more = body.has_more ? body.last_key : "";
    }
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    section.replaceChildren(heading, errorBox(explain(error, "see the proxy settings")));
    return;
  }
  if (!revisions.length) {
    section.replaceChildren(heading, h("p", { class: "empty", text: "No proxy settings revision yet." }));
    return;
  }
  // Who runs which revision (the edges' reports): shown when there are
  // any; a failure to read them leaves the timeline as it was. Those that
  // need attention come first (failed, then stale), whatever their names:
  // a page of 100 holds them before the edges that run fine.
  let edges = [];
  let moreEdges = false;
  try {
    const { body } = await api("GET", `/v1/projects/${encodeURIComponent(project.id)}/edges?order=attention&limit=100`, { signal });
    edges = body.data;
    moreEdges = body.has_more;
  } catch (error) {
    if (error.name === "AbortError") return;
  }
  const role = roleIn(project.organization_id);
  const mayChange = role !== "member";
  // At most EDGES_SHOWN edges on each revision, failed ones first (the
  // page's order); the rest are counted.
  const onRevision = (number) => {
    const running = edges.filter((edge) => edge.revision === number && !edge.stale);
    const shown = running.slice(0, EDGES_SHOWN).map((edge) =>
      edge.status === "failed"
        ? h("p", { class: "edge failed", text: `Failed on ${edge.name}: ${edge.error}` })
        : h("p", { class: "edge", text: `Running on ${edge.name}` }),
    );
    if (running.length > EDGES_SHOWN) shown.push(h("p", { class: "edge more muted", text: `and ${running.length - EDGES_SHOWN} more` }));
    return shown;
  };
  const items = revisions.map((revision) =>
    h(
      "li",
      { class: revision.is_active ? "revision active" : "revision", "data-revision": revision.revision },
      h(
        "div",
        { class: "revision-head" },
        h("strong", { text: `Revision ${revision.revision}` }),
        revision.is_active ? h("span", { class: "badge", text: "✓ Active" }) : h("span", { class: "muted", text: "inactive" }),
      ),
      h("p", { text: revision.description || "(no description)" }),
      h("p", { class: "muted", text: `${revision.backends.length} backends, ${revision.routes.length} routes` }),
      ...onRevision(revision.revision),
      revision.is_active
        ? null
        : h("button", {
            type: "button",
            class: "activate",
            text: `Activate revision ${revision.revision}`,
            onclick: () => activate(project, revision, section, status, signal),
          }),
    ),
  );
  const newest = revisions[0].revision;
  const active = revisions.find((revision) => revision.is_active)?.revision;
  const older = revisions.length > 1 ? revisions[1].revision : newest;
  const choose = (id, label, selected) =>
    h(
      "span",
      { class: "field" },
      h("label", { for: id, text: label }),
      h("select", { id }, revisions.map((r) => h("option", { value: r.revision, selected: r.revision === selected, text: `Revision ${r.revision}${r.is_active ? " (active)" : ""}` }))),
    );
  const compare = h(
    "form",
    {
      class: "toolbar",
      "aria-label": "Compare two revisions",
      onsubmit: (event) => {
        event.preventDefault();
        go(`#/projects/${encodeURIComponent(project.id)}/diff/${$("diff-a").value}/${$("diff-b").value}`);
      },
    },
    choose("diff-a", "Compare revision", active && active !== newest ? active : older),
    choose("diff-b", "with revision", newest),
    h("button", { type: "submit", text: "Show differences" }),
  );
  const readOnly =
    role === "member"
      ? h("p", { class: "muted", text: `Your role in ${organizationName(project.organization_id)} is member: you can read and compare revisions; activating one needs an editor or an admin.` })
      : null;
  // replaceChildren writes a null as the text "null": the parts that may
  // be absent (the member's note, the button for older revisions) are
  // left out instead.
  const parts = [
    heading,
    edges.length ? h("p", { class: "edges-summary", text: edgesSummary(edges, moreEdges) }) : null,
    staleEdges(project, edges, mayChange, section, signal),
    readOnly,
    status,
    compare,
    h("ol", { class: "timeline", "aria-label": "Revisions, newest first" }, items),
    more ? h("button", { type: "button", text: "Load older revisions", onclick: () => showRevisions(project, section, signal, revisions, more) }) : null,
  ];
  section.replaceChildren(...parts.filter((part) => part !== null));
}

/** Edges shown on one revision, and failures told in the summary, at most. */
const EDGES_SHOWN = 5;
const FAILURES_TOLD = 3;

/** "2 edges on revision 4, 1 on revision 3, 1 failed on 4: REASON, 1 stale"
 * (the same words as `proxydeck proxy-settings edges`); past
 * FAILURES_TOLD failures, "N more failed"; "more edges not counted" when
 * the page did not hold them all. Bounded whatever the edges report. */
function edgesSummary(edges, more) {
  const applied = new Map();
  const parts = [];
  let failed = 0;
  let stale = 0;
  for (const edge of edges) {
    if (edge.stale) stale += 1;
    else if (edge.status === "failed") {
      failed += 1;
      if (failed <= FAILURES_TOLD) parts.push(`1 failed on ${edge.revision}: ${edge.error}`);
    } else applied.set(edge.revision, (applied.get(edge.revision) || 0) + 1);
  }
  const counted = [...applied.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([revision, count], i) => `${count} ${i === 0 ? (count === 1 ? "edge " : "edges ") : ""}on revision ${revision}`);
  if (failed > FAILURES_TOLD) parts.push(`${failed - FAILURES_TOLD} more failed`);
  if (stale) parts.push(`${stale} stale`);
  if (more) parts.push("more edges not counted");
  return [...counted, ...parts].join(", ");
}

/** The stale edges (no report for 3 minutes), at most EDGES_SHOWN, each
 * with a button that removes its report for those who may change the
 * project; null when there is none. */
function staleEdges(project, edges, mayChange, section, signal) {
  const stale = edges.filter((edge) => edge.stale);
  if (!stale.length) return null;
  const items = stale.slice(0, EDGES_SHOWN).map((edge) =>
    h(
      "li",
      { class: "edge stale", "data-edge": edge.name },
      h("span", { text: `${edge.name}: last reported revision ${edge.revision} at ${edge.reported_at}` }),
      mayChange
        ? h("button", { type: "button", class: "remove-edge", text: `Remove ${edge.name}`, onclick: () => removeEdge(project, edge, section, signal) })
        : null,
    ),
  );
  if (stale.length > EDGES_SHOWN) items.push(h("li", { class: "muted", text: `and ${stale.length - EDGES_SHOWN} more` }));
  return h("ul", { class: "stale-edges", "aria-label": "Stale edges" }, items);
}

async function removeEdge(project, edge, section, signal) {
  const confirmed = await confirmAction(
    `Remove edge ${edge.name}?`,
    `The report of ${edge.name} leaves ${project.slug}. If the edge reports again, it comes back.`,
    `Remove ${edge.name}`,
  );
  if (!confirmed) return;
  try {
    await api("DELETE", `/v1/projects/${encodeURIComponent(project.id)}/edges/${encodeURIComponent(edge.name)}`, { signal });
    notify(`The report of ${edge.name} was removed from ${project.slug}.`);
    await showRevisions(project, section, signal);
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    notify(explain(error, "remove edge reports", project.organization_id));
  }
}

async function activate(project, revision, section, status, signal) {
  const confirmed = await confirmAction(
    `Activate revision ${revision.revision}?`,
    `${project.slug} will use the backends and routes of revision ${revision.revision} (“${revision.description}”). The revision active now becomes inactive; you can activate it again later to roll back.`,
    `Activate revision ${revision.revision}`,
  );
  if (!confirmed) return;
  status.replaceChildren(h("p", { class: "loading", role: "status", text: `Activating revision ${revision.revision}…` }));
  try {
    await api("POST", `/v1/projects/${encodeURIComponent(project.id)}/proxy-settings/${revision.revision}`, { body: { is_active: true }, signal });
    notify(`Revision ${revision.revision} of ${project.slug} is now active.`);
    await showRevisions(project, section, signal);
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    status.replaceChildren(errorBox(explain(error, "activate proxy settings revisions", project.organization_id)));
  }
}

/** One revision by number, read through the listing's own cursor: the
 * page of one after the revision before it (oldest first). */
async function fetchRevision(projectId, number, signal) {
  const { body } = await api(
    "GET",
    `/v1/projects/${encodeURIComponent(projectId)}/proxy-settings?${query({ limit: 1, order_direction: "ASC", start_key: number > 1 ? String(number - 1) : "" })}`,
    { signal },
  );
  const revision = body.data[0];
  if (!revision || revision.revision !== number) throw new ApiError(404, null, null, null);
  return revision;
}

// ----- Comparing two revisions -----
// One rule, the terminal's too (`proxydeck proxy-settings diff`), written
// in docs/management.md ("Comparing revisions"); both run the cases of
// tests/integration/fixtures/revision-diff-cases.json. Backends are paired
// by name, routes by what they match (path, and whether it is a regex):
// the k-th item of A with a key and the k-th item of B with the same key
// are a pair. A lone item of A is removed, of B added; a pair is changed
// when a member differs, member by member, else unchanged.

/** Whether two JSON values are the same (objects whatever their members'
 * order). */
function sameValue(x, y) {
  if (x === y) return true;
  if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
  if (Array.isArray(x) !== Array.isArray(y)) return false;
  const names = Object.keys(x);
  return names.length === Object.keys(y).length && names.every((name) => Object.hasOwn(y, name) && sameValue(x[name], y[name]));
}

const backendKey = (backend) => JSON.stringify(backend.name ?? null);
const routeKey = (route) => JSON.stringify([route.path ?? null, route.regex === true]);

/** The items of `from` and `to` paired by `keyOf`: `from`'s items in
 * order (with their partners, if any), then `to`'s items left alone in
 * order. Positions count from 1. */
function pairUp(from, to, keyOf) {
  const waiting = new Map();
  to.forEach((item, index) => {
    const key = keyOf(item);
    if (!waiting.has(key)) waiting.set(key, []);
    waiting.get(key).push(index);
  });
  const taken = new Set();
  const pairs = from.map((item, index) => {
    const partner = waiting.get(keyOf(item))?.shift();
    if (partner === undefined) return { a: item, fromPosition: index + 1 };
    taken.add(partner);
    return { a: item, b: to[partner], fromPosition: index + 1, toPosition: partner + 1 };
  });
  to.forEach((item, index) => {
    if (!taken.has(index)) pairs.push({ b: item, toPosition: index + 1 });
  });
  return pairs;
}

/** The members that differ between `from` and `to`, in name order: each
 * with its value in A (`from`) and in B (`to`), absent on a side that
 * does not have it. */
function memberChanges(from, to) {
  const names = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  return names
    .filter((name) => !sameValue(from[name], to[name]))
    .map((name) => {
      const change = { member: name };
      if (from[name] !== undefined) change.from = from[name];
      if (to[name] !== undefined) change.to = to[name];
      return change;
    });
}

/** The ranks whose paired routes (the same rank in A and B) B lists in
 * another order than A, in the order each rank first comes in A: the edges
 * evaluate routes of one rank in the order of the list, so such a reorder
 * is a change although no route changed. Each: the rank, its routes' paths
 * in A's order and in B's. */
function reorderedRanks(pairs) {
  const ranks = new Map();
  for (const pair of pairs) {
    if (!pair.a || !pair.b || !sameValue(pair.a.rank, pair.b.rank)) continue;
    const key = JSON.stringify(pair.a.rank ?? null);
    if (!ranks.has(key)) ranks.set(key, []);
    ranks.get(key).push(pair);
  }
  const path = (route) => (typeof route.path === "string" ? route.path : "");
  return [...ranks.values()]
    .filter((group) => group.some((pair, i) => i > 0 && group[i - 1].toPosition > pair.toPosition))
    .map((group) => ({
      rank: group[0].a.rank,
      from: group.map((pair) => path(pair.a)),
      to: [...group].sort((x, y) => x.toPosition - y.toPosition).map((pair) => path(pair.b)),
    }));
}

const verdictOf = (pair) => (!pair.a ? "added" : !pair.b ? "removed" : memberChanges(pair.a, pair.b).length ? "changed" : "unchanged");

/** What changed from revision `a` to `b`, shaped as the terminal's
 * `proxydeck proxy-settings diff --json` says it (its backends, routes and
 * unchanged counts). */
function revisionDiff(a, b) {
  const diff = { backends: [], routes: [], reordered: reorderedRanks(pairUp(a.routes || [], b.routes || [], routeKey)), unchanged: { backends: 0, routes: 0 } };
  for (const pair of pairUp(a.backends || [], b.backends || [], backendKey)) {
    const item = pair.a || pair.b;
    const name = typeof item.name === "string" ? item.name : JSON.stringify(item.name ?? null);
    const verdict = verdictOf(pair);
    if (verdict === "unchanged") diff.unchanged.backends += 1;
    else if (verdict === "added") diff.backends.push({ change: verdict, name, to: pair.b });
    else if (verdict === "removed") diff.backends.push({ change: verdict, name, from: pair.a });
    else diff.backends.push({ change: verdict, name, members: memberChanges(pair.a, pair.b) });
  }
  for (const pair of pairUp(a.routes || [], b.routes || [], routeKey)) {
    const verdict = verdictOf(pair);
    if (verdict === "unchanged") diff.unchanged.routes += 1;
    else if (verdict === "added") diff.routes.push({ change: verdict, to_position: pair.toPosition, to: pair.b });
    else if (verdict === "removed") diff.routes.push({ change: verdict, from_position: pair.fromPosition, from: pair.a });
    else
      diff.routes.push({
        change: verdict,
        from_position: pair.fromPosition,
        to_position: pair.toPosition,
        to: pair.b,
        members: memberChanges(pair.a, pair.b),
      });
  }
  return diff;
}

const FIELD_ORDER = {
  backend: ["name", "address", "enable_ssl", "default", "override_host", "sni_hostname", "check_certificate", "ca_certificate"],
  route: ["path", "regex", "backend_name", "rank", "continent", "region", "country"],
};

const shownValue = (value) => (value === undefined ? "not set" : typeof value === "string" ? value : JSON.stringify(value));

/** One side of a pair: its members a line each, lines that differ from
 * the other side marked with "~" (and words for screen readers). */
function side(kind, item, other, label) {
  if (!item) return h("div", { class: "side missing" }, h("p", { class: "muted", text: `not in revision ${label}` }));
  const fields = [...new Set([...FIELD_ORDER[kind], ...Object.keys(item), ...Object.keys(other || {})])];
  return h(
    "div",
    { class: "side" },
    h(
      "ul",
      { class: "fields" },
      fields
        .filter((name) => item[name] !== undefined || (other && other[name] !== undefined))
        .map((name) => {
          const changed = other && !sameValue(item[name], other[name]);
          return h(
            "li",
            { class: changed ? "changed" : "" },
            h("span", { class: "sigil", "aria-hidden": "true", text: changed ? "~" : " " }),
            changed ? h("span", { class: "visually-hidden", text: "changed: " }) : null,
            h("span", { class: "name", text: `${name}: ` }),
            h("span", { class: "value", text: shownValue(item[name]) }),
          );
        }),
    ),
  );
}

/** One part of the diff: each pair with its verdict and both sides;
 * `label` names an item. */
function diffRows(kind, title, pairs, label, a, b) {
  const counts = { added: 0, removed: 0, changed: 0, unchanged: 0 };
  const rows = pairs.map((pair) => {
    const verdict = verdictOf(pair);
    counts[verdict] += 1;
    const sigil = { added: "+", removed: "−", changed: "~", unchanged: "=" }[verdict];
    return h(
      "div",
      { class: `diff-row ${verdict}`, "data-verdict": verdict },
      h("h3", {}, h("span", { class: "sigil", "aria-hidden": "true", text: sigil }), `${kind} ${label(pair.a || pair.b)} `, h("span", { class: "verdict", text: `(${verdict})` })),
      h("div", { class: "sides" }, side(kind, pair.a, pair.b, a), side(kind, pair.b, pair.a, b)),
    );
  });
  const summary = Object.entries(counts)
    .filter(([, n]) => n)
    .map(([verdict, n]) => `${n} ${verdict}`)
    .join(", ");
  return h("section", { class: "diff", "aria-label": title }, h("h2", { text: `${title}: ${summary || "none"}` }), rows);
}

async function viewDiff([id, first, second], _, signal) {
  const a = Number(first);
  const b = Number(second);
  loading(`revisions ${a} and ${b}`);
  const [{ body: project }, left, right] = await Promise.all([
    api("GET", `/v1/projects/${encodeURIComponent(id)}`, { signal }),
    fetchRevision(id, a, signal),
    fetchRevision(id, b, signal),
  ]);
  const header = (revision) =>
    h("div", { class: "side-head" }, h("strong", { text: `Revision ${revision.revision}` }), revision.is_active ? h("span", { class: "badge", text: "✓ Active" }) : null, h("p", { text: revision.description }));
  show(
    h("p", { class: "crumbs" }, h("a", { href: "#/projects", text: "Projects" }), " / ", h("a", { href: `#/projects/${encodeURIComponent(project.id)}`, text: project.slug })),
    h("h1", { text: `${project.slug}: revision ${a} against revision ${b}` }),
    h("p", { class: "legend" }, "Left: revision ", String(a), ". Right: revision ", String(b), ". Marks: + added, − removed, ~ changed, = unchanged."),
    h("p", {}, h("a", { href: `#/projects/${encodeURIComponent(project.id)}/diff/${b}/${a}`, text: "Swap sides" })),
    h("div", { class: "sides heads" }, header(left), header(right)),
    diffRows("backend", "Backends", pairUp(left.backends, right.backends, backendKey), (backend) => backend.name, a, b),
    diffRows("route", "Routes", pairUp(left.routes, right.routes, routeKey), (route) => `${route.path}${route.regex ? " (regex)" : ""}`, a, b),
    reorderedRanks(pairUp(left.routes, right.routes, routeKey)).map((reordered) =>
      h("p", { class: "diff-row changed reordered" }, h("span", { class: "sigil", "aria-hidden": "true", text: "~ " }), `Routes of rank ${shownValue(reordered.rank)}, evaluated in the order of the list: ${reordered.from.join(", ")} → ${reordered.to.join(", ")}`),
    ),
  );
}

// ----- API tokens -----

const EXPIRIES = [
  ["", "Never"],
  ["7", "In 7 days"],
  ["30", "In 30 days"],
  ["90", "In 90 days"],
  ["365", "In a year"],
];

async function viewTokens(_, params, signal) {
  const start = params.get("start_key") || "";
  loading("your API tokens");
  const { body } = await api("GET", `/v1/api_tokens?${query({ limit: PAGE_SIZE, start_key: start })}`, { signal });
  const created = h("div", { id: "created-token" });
  const name = h("input", { id: "token-name", name: "name", required: true, maxlength: 200, autocomplete: "off" });
  const expiry = h("select", { id: "token-expiry", name: "expires" }, EXPIRIES.map(([days, label]) => h("option", { value: days, text: label })));
  const createProblem = h("div", {});
  const create = h(
    "form",
    { class: "card toolbar", "aria-label": "Create a token", onsubmit: (event) => createToken(event, name, expiry, created, createProblem) },
    h("h2", { text: "Create a token" }),
    h("label", { for: "token-name", text: "Name" }),
    name,
    h("label", { for: "token-expiry", text: "Expires" }),
    expiry,
    h("button", { type: "submit", class: "primary", text: "Create token" }),
    createProblem,
  );
  const rowsProblem = h("div", {});
  const rows = body.data.map((token) =>
    h(
      "tr",
      { "data-token": token.id },
      h("td", { "data-label": "Name", text: token.name }),
      h("td", { "data-label": "Token" }, h("code", { text: token.token }), isSessionToken(token) ? h("span", { class: "muted", text: " (this session)" }) : null),
      h("td", { "data-label": "Created" }, when(token.created_at)),
      h("td", { "data-label": "Last used" }, when(token.last_used_at)),
      h("td", { "data-label": "Expires" }, token.expires_at ? when(token.expires_at) : h("span", { class: "muted", text: "never" })),
      h("td", { "data-label": "" }, h("button", { type: "button", class: "danger", text: `Revoke ${token.name}`, onclick: () => revoke(token, rowsProblem) })),
    ),
  );
  const table = rows.length
    ? h(
        "table",
        { class: "list", id: "tokens" },
        h("caption", { class: "visually-hidden", text: "Your API tokens" }),
        h("thead", {}, h("tr", {}, ["Name", "Token", "Created", "Last used", "Expires", "Actions"].map((n) => h("th", { scope: "col", text: n })))),
        h("tbody", {}, rows),
      )
    : h("p", { class: "empty", text: "No tokens." });
  const full = body.data.length === PAGE_SIZE;
  show(
    h("h1", { text: "API tokens" }),
    created,
    create,
    rowsProblem,
    table,
    pager("Pages of tokens", start, full ? body.data.at(-1).id : "", (key) => `#/tokens?${query({ start_key: key })}`),
  );
}

async function createToken(event, name, expiry, out, problem) {
  event.preventDefault();
  const body = { name: name.value.trim() };
  if (expiry.value) body.expires_at = new Date(Date.now() + Number(expiry.value) * 86400000).toISOString();
  problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Creating…" }));
  let made;
  try {
    ({ body: made } = await api("POST", "/v1/api_tokens", { body }));
  } catch (error) {
    if (endSessionOn(error)) return;
    problem.replaceChildren(errorBox(explain(error, "create tokens")));
    return;
  }
  problem.replaceChildren();
  // The secret goes in the field's value, not an attribute: it is never
  // part of the page's markup, and it leaves the page with the panel.
  const secret = h("input", { id: "new-secret", type: "text", readonly: true, "aria-label": "The new token", spellcheck: "false" });
  secret.value = made.token;
  const copied = h("span", { role: "status", class: "muted" });
  out.replaceChildren(
    h(
      "section",
      { class: "card secret", role: "alert", "aria-labelledby": "secret-title" },
      h("h2", { id: "secret-title", text: `Token “${made.name}” created` }),
      h("p", { class: "warning" }, h("strong", { text: "Copy it now: " }), "this is the only time it is shown. The service keeps only its digest and cannot show it again. Anyone holding it acts as you."),
      h("div", { class: "toolbar" }, secret, copyButton({ id: "copy-secret" }, () => secret.value, copied, () => secret.select()), copied),
      h("button", { type: "button", id: "hide-secret", text: "I have copied it: hide it", onclick: () => route() }),
    ),
  );
  name.value = "";
  secret.focus();
  secret.select();
}

/** Whether a listed token is, by its hint (the last four characters),
 * the one this console signed in with. */
const isSessionToken = (token) => Boolean(state.token) && token.token.endsWith(state.token.slice(-4));

async function revoke(token, problem) {
  const mine = isSessionToken(token);
  const confirmed = await confirmAction(
    `Revoke the token “${token.name}”?`,
    `Programs using it are refused from now on. This cannot be undone.${mine ? " It looks like the token this console signed in with: you would be signed out." : ""}`,
    "Revoke",
  );
  if (!confirmed) return;
  try {
    await api("DELETE", `/v1/api_tokens/${encodeURIComponent(token.id)}`);
    notify(`Token “${token.name}” revoked.`);
    route();
  } catch (error) {
    if (endSessionOn(error)) return;
    problem.replaceChildren(errorBox(explain(error, "revoke this token")));
  }
}

// ----- Teams: organizations, their members and invitations -----
// docs/teams.md: any user creates an organization (and is its admin);
// admins rename and delete it, change roles, remove members and invite
// people; any member reads the members and may leave. The API decides:
// the console shows admins' controls to admins only, and every refusal
// in the API's own words.

const ROLES = ["admin", "editor", "member"];
const MEMBERS_PAGE = 20;

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

/** A labelled field with a place for the API's word on it (its
 * `params[].param` is `param`): `input` needs an id. */
const fieldErrors = new WeakMap();
function field(labelText, input, param) {
  const said = h("span", { class: "field-error", id: `${input.id}-error`, "data-param": param });
  fieldErrors.set(input, said);
  input.setAttribute("aria-describedby", said.id);
  return h("span", { class: "field" }, h("label", { for: input.id, text: labelText }), input, said);
}

function clearFieldErrors(inputs) {
  for (const input of Object.values(inputs)) {
    input.removeAttribute("aria-invalid");
    const said = fieldErrors.get(input);
    if (said) said.textContent = "";
  }
}

/** A refusal, in the API's words: each member it names (`params`) next to
 * its field in `inputs` (keyed by the API's name), the rest in `general`.
 * 403 and 409 are said as the API words them. */
function refusal(error, general, inputs = {}, action = "do this", organizationId = null) {
  if (error.name === "AbortError" || endSessionOn(error)) return;
  clearFieldErrors(inputs);
  const params = error.body?.error?.params || [];
  const elsewhere = [];
  let first = null;
  for (const p of params) {
    const input = inputs[p.param];
    const said = input && fieldErrors.get(input);
    if (said) {
      said.textContent = `${p.param} ${p.message}`;
      input.setAttribute("aria-invalid", "true");
      first ??= input;
    } else elsewhere.push(p);
  }
  const apiSaid = error.body?.error?.message;
  let text;
  if ((error.status === 403 || error.status === 409) && apiSaid) text = apiSaid;
  else if (error.status === 400 && params.length && !elsewhere.length) text = "Check the fields marked below.";
  else if (error.status === 400 && elsewhere.length) text = `The service refused the request as invalid: ${elsewhere.map((p) => `${p.param}: ${p.message}`).join("; ")}`;
  else text = explain(error, action, organizationId);
  general.replaceChildren(errorBox(text));
  first?.focus();
}

/** The caller again (its roles), and the organizations read afresh: after
 * it joined, created or left one. */
async function refreshMe(signal) {
  const { body } = await api("GET", "/v1/users/me", { signal });
  signedIn(body);
  state.organizations = null;
  return body;
}

async function viewOrganizations(_, __, signal) {
  loading("your organizations");
  state.organizations = null;
  const organizations = await loadOrganizations(signal);
  const rows = [...organizations.values()].map((organization) =>
    h(
      "tr",
      { "data-organization": organization.id },
      h("td", { "data-label": "Name" }, h("a", { href: `#/organizations/${encodeURIComponent(organization.id)}`, text: organization.name })),
      h("td", { "data-label": "Slug" }, organization.slug ? h("code", { text: organization.slug }) : h("span", { class: "muted", text: "none" })),
      h("td", { "data-label": "Your role", text: roleIn(organization.id) }),
      h("td", { "data-label": "Projects" }, h("a", { href: `#/projects?${query({ organization_id: organization.id })}`, text: `Projects of ${organization.name}` })),
    ),
  );
  const table = rows.length
    ? h(
        "table",
        { class: "list", id: "organizations" },
        h("caption", { class: "visually-hidden", text: "Your organizations" }),
        h("thead", {}, h("tr", {}, ["Name", "Slug", "Your role", "Projects"].map((n) => h("th", { scope: "col", text: n })))),
        h("tbody", {}, rows),
      )
    : h("p", { class: "empty", text: "You are in no organization yet: create one, or accept an invitation." });
  show(h("h1", { text: "Organizations" }), table, createOrganizationForm(signal));
}

/** The slug a name suggests: lowercase letters and digits, `-` between. */
const slugOf = (name) =>
  name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/g, "");

function createOrganizationForm(signal) {
  const name = h("input", { id: "new-org-name", name: "name", required: true, maxlength: 100, autocomplete: "off" });
  const slug = h("input", { id: "new-org-slug", name: "slug", required: true, maxlength: 63, autocomplete: "off", spellcheck: "false" });
  let slugTyped = false;
  name.addEventListener("input", () => {
    if (!slugTyped) slug.value = slugOf(name.value);
  });
  slug.addEventListener("input", () => {
    slugTyped = slug.value !== "";
  });
  const problem = h("div", { class: "form-problem" });
  const form = h(
    "form",
    {
      class: "card toolbar",
      id: "create-organization",
      "aria-label": "Create an organization",
      onsubmit: async (event) => {
        event.preventDefault();
        const body = { name: name.value.trim(), slug: slug.value.trim() };
        problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Creating…" }));
        try {
          const { body: made } = await api("POST", "/v1/organizations", { body, signal, headers: { "Idempotency-Key": idempotencyKeyFor(form, body) } });
          createKeys.delete(form);
          await refreshMe(signal);
          notify(`${made.name} was created: you are its admin. Invite people from its page.`);
          go(`#/organizations/${encodeURIComponent(made.id)}`);
        } catch (error) {
          refusal(error, problem, { name, slug }, "create organizations");
        }
      },
    },
    h("h2", { text: "Create an organization" }),
    h("p", { class: "muted", text: "You become its admin. The slug names it in addresses and the terminal client: a-z, 0-9 and -." }),
    field("Name", name, "name"),
    field("Slug", slug, "slug"),
    h("button", { type: "submit", class: "primary", text: "Create organization" }),
    problem,
  );
  return form;
}

async function viewOrganization([id], params, signal) {
  const start = params.get("start_key") || "";
  loading("the organization");
  await loadOrganizations(signal);
  const answer = await api("GET", `/v1/organizations/${encodeURIComponent(id)}`, { signal });
  const organization = answer.body;
  const page = { organization, etag: answer.etag, admin: roleIn(organization.id) === "admin" };
  const heading = h("h1", { text: organization.name });
  const about = h("section", { class: "card", id: "organization", "aria-labelledby": "s-organization" });
  const members = h("section", { class: "card wide", id: "members", "aria-labelledby": "s-members" }, h("h2", { id: "s-members", text: "Members" }));
  const invitations = page.admin
    ? h("section", { class: "card wide", id: "invitations", "aria-labelledby": "s-invitations" }, h("h2", { id: "s-invitations", text: "Invitations" }))
    : null;
  const danger = page.admin ? deleteOrganizationCard(page, signal) : null;
  showAbout(page, about, heading, signal);
  show(
    ...[
      h("p", { class: "crumbs" }, h("a", { href: "#/organizations", text: "Organizations" }), " / ", organization.slug || organization.name),
      heading,
      about,
      members,
      invitations,
      danger,
    ].filter((part) => part !== null),
  );
  await Promise.all([showMembers(page, members, start, signal), invitations ? showInvitations(page, invitations, signal) : null]);
}

/** The organization's name, slug and the caller's role; admins rename it
 * (If-Match with the organization's ETag). */
function showAbout(page, section, heading, signal) {
  const { organization } = page;
  const parts = [
    settings("s-organization", "Organization", [
      ["Name", organization.name],
      ["Slug", organization.slug],
      ["Id", organization.id],
      ["Your role", roleIn(organization.id)],
      ["Projects", h("a", { href: `#/projects?${query({ organization_id: organization.id })}`, text: `Projects of ${organization.name}` })],
    ]).querySelector("dl"),
  ];
  if (page.admin) {
    const name = h("input", { id: "org-name", name: "name", required: true, maxlength: 100, autocomplete: "off" });
    const slug = h("input", { id: "org-slug", name: "slug", required: true, maxlength: 63, autocomplete: "off", spellcheck: "false" });
    name.value = organization.name;
    slug.value = organization.slug || "";
    const problem = h("div", { class: "form-problem" });
    parts.push(
      h(
        "form",
        {
          class: "toolbar wide",
          id: "rename-organization",
          "aria-label": "Rename the organization",
          onsubmit: async (event) => {
            event.preventDefault();
            const body = { id: organization.id };
            if (name.value.trim() !== organization.name) body.name = name.value.trim();
            if (slug.value.trim() !== (organization.slug || "")) body.slug = slug.value.trim();
            problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Saving…" }));
            try {
              const headers = page.etag ? { "If-Match": page.etag } : {};
              const { body: changed, etag } = await api("POST", `/v1/organizations/${encodeURIComponent(organization.id)}`, { body, signal, headers });
              page.organization = changed;
              page.etag = etag;
              state.organizations?.set(changed.id, changed);
              heading.textContent = changed.name;
              notify(`The organization is now ${changed.name} (${changed.slug}).`);
              showAbout(page, section, heading, signal);
            } catch (error) {
              refusal(error, problem, { name, slug }, "rename this organization", organization.id);
            }
          },
        },
        h("h3", { text: "Rename" }),
        field("Name", name, "name"),
        field("Slug", slug, "slug"),
        h("button", { type: "submit", class: "primary", text: "Save" }),
        problem,
      ),
    );
  }
  section.replaceChildren(h("h2", { id: "s-organization", text: "Organization" }), ...parts);
}

/** A page of members (keyset-paged through the API's cursor, like the
 * projects): each with its role; admins change a role and remove a
 * member, anyone leaves. */
async function showMembers(page, section, start, signal) {
  const { organization } = page;
  const heading = section.querySelector("h2");
  section.replaceChildren(heading, h("p", { class: "loading", role: "status", text: "Loading members…" }));
  let body;
  try {
    ({ body } = await api("GET", `/v1/organizations/${encodeURIComponent(organization.id)}/users?${query({ limit: MEMBERS_PAGE, start_key: start })}`, { signal }));
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    section.replaceChildren(heading, errorBox(explain(error, "see the members", organization.id)));
    return;
  }
  const problem = h("div", { class: "members-problem" });
  const rows = body.data.map((member) => memberRow(page, member, problem, section, start, signal));
  const table = rows.length
    ? h(
        "table",
        { class: "list", id: "member-list" },
        h("caption", { class: "visually-hidden", text: "Members" }),
        h("thead", {}, h("tr", {}, ["Name", "Email", "Role", "Actions"].map((n) => h("th", { scope: "col", text: n })))),
        h("tbody", {}, rows),
      )
    : h("p", { class: "empty", text: start ? "No more members." : "No members." });
  const hashFor = (key) => `#/organizations/${encodeURIComponent(organization.id)}?${query({ start_key: key })}`;
  section.replaceChildren(
    ...[
      heading,
      page.admin ? null : h("p", { class: "muted", text: `Your role in ${organization.name} is ${roleIn(organization.id)}: you can read the members and leave; changing roles, removing members and inviting needs an admin.` }),
      problem,
      table,
      pager("Pages of members", start, body.has_more ? body.last_key : "", hashFor),
    ].filter((part) => part !== null),
  );
}

/** The ETags the API gave for memberships (by user id), from the answers
 * of role changes: sent as If-Match on the next change of that member. */
const membershipTags = new Map();

function memberRow(page, member, problem, section, start, signal) {
  const { organization } = page;
  const self = member.id === state.me?.id;
  let roleCell = h("td", { "data-label": "Role", class: "role", text: member.role });
  const actions = [];
  if (page.admin) {
    const select = h(
      "select",
      { id: `role-${member.id}`, class: "member-role", "aria-label": `Role of ${member.name || member.email}` },
      ROLES.map((role) => h("option", { value: role, selected: role === member.role, text: role })),
    );
    roleCell = h(
      "td",
      { "data-label": "Role", class: "role" },
      h(
        "span",
        { class: "field" },
        select,
        h("button", { type: "button", class: "set-role", text: "Change role", onclick: () => changeRole(page, member, select.value, problem, section, start, signal) }),
      ),
    );
  }
  if (self) {
    actions.push(h("button", { type: "button", class: "danger leave", text: `Leave ${organization.name}`, onclick: () => leave(page, problem, signal) }));
  } else if (page.admin) {
    actions.push(h("button", { type: "button", class: "danger remove-member", text: `Remove ${member.name || member.email}`, onclick: () => removeMember(page, member, problem, section, start, signal) }));
  }
  return h(
    "tr",
    { "data-member": member.id },
    h("td", { "data-label": "Name" }, member.name || "—", self ? h("span", { class: "muted", text: " (you)" }) : null),
    h("td", { "data-label": "Email", text: member.email }),
    roleCell,
    h("td", { "data-label": "" }, ...actions),
  );
}

async function changeRole(page, member, role, problem, section, start, signal) {
  const { organization } = page;
  if (role === member.role) {
    problem.replaceChildren(h("p", { class: "muted", role: "status", text: `${member.email} is ${role} already.` }));
    return;
  }
  problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Changing the role…" }));
  try {
    const tag = membershipTags.get(`${organization.id}/${member.id}`) || member.etag;
    const headers = tag ? { "If-Match": tag } : {};
    const { body, etag } = await api("POST", `/v1/organizations/${encodeURIComponent(organization.id)}/users/${encodeURIComponent(member.id)}`, { body: { role }, signal, headers });
    if (etag) membershipTags.set(`${organization.id}/${member.id}`, etag);
    notify(`${body.email} is now ${body.role} of ${organization.name}.`);
    if (member.id === state.me?.id) {
      await refreshMe(signal);
      route();
      return;
    }
    await showMembers(page, section, start, signal);
  } catch (error) {
    refusal(error, problem, {}, "change roles", organization.id);
  }
}

async function removeMember(page, member, problem, section, start, signal) {
  const { organization } = page;
  const who = member.name ? `${member.name} (${member.email})` : member.email;
  const confirmed = await confirmAction(
    `Remove ${who} from ${organization.name}?`,
    `${who} loses access to ${organization.name} and its projects: at once for changes, within a few seconds for reading. To let them back, invite them again.`,
    "Remove",
  );
  if (!confirmed) return;
  try {
    const tag = membershipTags.get(`${organization.id}/${member.id}`) || member.etag;
    const headers = tag ? { "If-Match": tag } : {};
    await api("DELETE", `/v1/organizations/${encodeURIComponent(organization.id)}/users/${encodeURIComponent(member.id)}`, { signal, headers });
    membershipTags.delete(`${organization.id}/${member.id}`);
    notify(`${who} was removed from ${organization.name}.`);
    await showMembers(page, section, start, signal);
  } catch (error) {
    refusal(error, problem, {}, "remove members", organization.id);
  }
}

async function leave(page, problem, signal) {
  const { organization } = page;
  const confirmed = await confirmAction(
    `Leave ${organization.name}?`,
    `You lose access to ${organization.name} and its projects. To come back, an admin must invite you again.`,
    `Leave ${organization.name}`,
  );
  if (!confirmed) return;
  try {
    await api("DELETE", `/v1/organizations/${encodeURIComponent(organization.id)}/users/${encodeURIComponent(state.me.id)}`, { signal });
    await refreshMe(signal);
    notify(`You left ${organization.name}.`);
    go("#/organizations");
  } catch (error) {
    refusal(error, problem, {}, "leave", organization.id);
  }
}

/** The pending (and expired) invitations of the organization, and the
 * form that invites someone; admins only. */
async function showInvitations(page, section, signal) {
  const { organization } = page;
  const heading = h("h2", { id: "s-invitations", text: "Invitations" });
  const made = h("div", { id: "invitation-made" });
  const email = h("input", { id: "invite-email", name: "email", type: "email", required: true, autocomplete: "off", spellcheck: "false", maxlength: 320 });
  const role = h("select", { id: "invite-role", name: "role" }, ROLES.map((r) => h("option", { value: r, selected: r === "member", text: r })));
  const problem = h("div", { class: "form-problem" });
  const list = h("div", { class: "invitation-list" });
  const form = h(
    "form",
    {
      class: "toolbar",
      id: "invite",
      "aria-label": "Invite someone",
      onsubmit: async (event) => {
        event.preventDefault();
        const body = { organization_id: organization.id, email: email.value.trim(), role: role.value };
        problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Inviting…" }));
        try {
          const { body: invitation } = await api("POST", "/v1/invitations", { body, signal, headers: { "Idempotency-Key": idempotencyKeyFor(form, body) } });
          createKeys.delete(form);
          problem.replaceChildren();
          clearFieldErrors({ email, role });
          made.replaceChildren(invitationMade(invitation, made));
          email.value = "";
          await listInvitations(page, list, signal);
          made.querySelector("input, h3")?.focus();
        } catch (error) {
          refusal(error, problem, { email, role }, "invite people", organization.id);
        }
      },
    },
    h("h3", { text: "Invite someone" }),
    field("Email", email, "email"),
    field("Role", role, "role"),
    h("button", { type: "submit", class: "primary", text: "Invite" }),
    problem,
  );
  section.replaceChildren(heading, made, form, list);
  await listInvitations(page, list, signal);
}

/** What became of a new invitation: emailed, or its link to pass on,
 * shown this once (the service keeps only its digest). */
function invitationMade(invitation, out) {
  if (invitation.delivery === "email") {
    return h("p", { class: "notice-inline", role: "status", text: `An invitation was emailed to ${invitation.email}, as ${invitation.role}.` });
  }
  if (!invitation.accept_url) {
    // A replay of a create whose first answer was lost keeps no secret.
    return errorBox(`The invitation for ${invitation.email} was made, but its link is shown only once and this answer no longer holds it: revoke it and invite again.`);
  }
  const link = h("input", { id: "invitation-link", type: "text", readonly: true, "aria-label": "The invitation's link", spellcheck: "false" });
  link.value = invitation.accept_url;
  const copied = h("span", { role: "status", class: "muted" });
  return h(
    "section",
    { class: "card secret", role: "alert", "aria-labelledby": "invitation-title" },
    h("h3", { id: "invitation-title", text: `Invitation for ${invitation.email} (${invitation.role})`, tabindex: "-1" }),
    h(
      "p",
      { class: "warning" },
      h("strong", { text: "Pass this link on now: " }),
      "no email was sent, and this is the only time it is shown. Whoever opens it can join as that email until it is used, revoked or expires",
      invitation.expires_at ? [" (", when(invitation.expires_at), ")"] : "",
      ".",
    ),
    h("div", { class: "toolbar" }, link, copyButton({ id: "copy-invitation" }, () => link.value, copied, () => link.select()), copied),
    h("button", { type: "button", id: "hide-invitation", text: "I have passed it on: hide it", onclick: () => out.replaceChildren() }),
  );
}

async function listInvitations(page, list, signal, loaded = [], start = "") {
  const { organization } = page;
  let invitations = loaded;
  let more = "";
  try {
    const { body } = await api("GET", `/v1/invitations?${query({ organization_id: organization.id, limit: 100, start_key: start })}`, { signal });
    invitations = [...loaded, ...body.data];
    more = body.has_more ? body.last_key : "";
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    list.replaceChildren(errorBox(explain(error, "see the invitations", organization.id)));
    return;
  }
  const problem = h("div", {});
  const rows = invitations.map((invitation) =>
    h(
      "tr",
      { "data-invitation": invitation.id },
      h("td", { "data-label": "Email", text: invitation.email }),
      h("td", { "data-label": "Role", text: invitation.role }),
      h("td", { "data-label": "Status", text: invitation.status === "expired" ? "expired" : "pending" }),
      h("td", { "data-label": "Sent" }, when(invitation.created_at)),
      h("td", { "data-label": "Expires" }, when(invitation.expires_at)),
      h(
        "td",
        { "data-label": "" },
        h("button", {
          type: "button",
          class: "danger revoke-invitation",
          text: `Revoke ${invitation.email}`,
          onclick: () => revokeInvitation(page, invitation, list, problem, signal),
        }),
      ),
    ),
  );
  list.replaceChildren(
    ...[
      problem,
      rows.length
        ? h(
            "table",
            { class: "list", id: "invitation-rows" },
            h("caption", { class: "visually-hidden", text: "Invitations not accepted yet" }),
            h("thead", {}, h("tr", {}, ["Email", "Role", "Status", "Sent", "Expires", "Actions"].map((n) => h("th", { scope: "col", text: n })))),
            h("tbody", {}, rows),
          )
        : h("p", { class: "empty", text: "No invitation waits to be accepted." }),
      more ? h("button", { type: "button", text: "Load more invitations", onclick: () => listInvitations(page, list, signal, invitations, more) }) : null,
    ].filter((part) => part !== null),
  );
}

async function revokeInvitation(page, invitation, list, problem, signal) {
  const confirmed = await confirmAction(
    `Revoke the invitation for ${invitation.email}?`,
    `Its link stops working: ${invitation.email} can no longer join ${page.organization.name} with it.`,
    "Revoke",
  );
  if (!confirmed) return;
  try {
    await api("DELETE", `/v1/invitations/${encodeURIComponent(invitation.id)}`, { signal });
    notify(`The invitation for ${invitation.email} was revoked.`);
    await listInvitations(page, list, signal);
  } catch (error) {
    refusal(error, problem, {}, "revoke invitations", page.organization.id);
  }
}

/** Deleting the organization: admins; the API refuses it (409) while it
 * has projects, and says how many. */
function deleteOrganizationCard(page, signal) {
  const problem = h("div", { class: "delete-problem" });
  return h(
    "section",
    { class: "card wide", id: "delete-organization", "aria-labelledby": "s-delete" },
    h("h2", { id: "s-delete", text: "Delete the organization" }),
    h("p", { text: "Every member loses it, its pending invitations end and its slug is free again. An organization with projects cannot be deleted: delete each project first, so that every edge applies the change." }),
    h("button", {
      type: "button",
      class: "danger",
      id: "delete-organization-button",
      text: `Delete ${page.organization.name}`,
      onclick: async () => {
        const { organization } = page;
        const confirmed = await confirmAction(`Delete ${organization.name}?`, `${organization.name} and its memberships end for every member. This cannot be undone.`, `Delete ${organization.name}`);
        if (!confirmed) return;
        try {
          const headers = page.etag ? { "If-Match": page.etag } : {};
          await api("DELETE", `/v1/organizations/${encodeURIComponent(organization.id)}`, { signal, headers });
          await refreshMe(signal);
          notify(`${organization.name} was deleted.`);
          go("#/organizations");
        } catch (error) {
          refusal(error, problem, {}, "delete this organization", organization.id);
          if (error.status === 409) {
            problem.append(
              h("p", {}, "Delete its projects first (", h("a", { href: `#/projects?${query({ organization_id: organization.id })}`, text: `the projects of ${organization.name}` }), "), then delete the organization."),
            );
          }
        }
      },
    }),
    problem,
  );
}

// ----- Accepting an invitation (`#/accept?invitation=SECRET`) -----

/** Takes the invitation's secret out of the address at once: it stays in
 * memory only (not in history, not in the markup). */
function takeInvitationFromAddress() {
  const { path, params } = hashParams();
  if (path === "/accept" && params.has("invitation")) {
    state.invitation = params.get("invitation");
    history.replaceState(null, "", "#/accept");
  }
}

function viewAccept() {
  const secret = state.invitation;
  if (!secret) {
    show(
      h("h1", { text: "Accept an invitation" }),
      h("p", { text: "This page needs the link of your invitation. Open the link from the invitation again; if it no longer works, ask an admin of the organization for a new one." }),
      state.token ? h("p", {}, h("a", { href: "#/projects", text: "Go to your projects" })) : null,
    );
    return;
  }
  const email = h("input", { id: "accept-email", name: "email", type: "email", required: true, autocomplete: "email", spellcheck: "false" });
  const name = h("input", { id: "accept-name", name: "name", maxlength: 200, autocomplete: "name" });
  if (state.me) email.value = state.me.email;
  const problem = h("div", { id: "accept-problem" });
  const inputs = state.token ? { email } : { email, name };
  const form = h(
    "form",
    { class: "card sign-in", id: "accept", "aria-label": "Accept the invitation", onsubmit: (event) => accept(event, secret, inputs, problem) },
    field("Your email (the one the invitation was sent to)", email, "email"),
    state.token ? null : field("Your name, for a new account (optional)", name, "name"),
    h("button", { type: "submit", class: "primary", text: "Accept the invitation" }),
  );
  show(
    h("h1", { text: "Accept an invitation" }),
    state.me
      ? h("p", { text: `You are signed in as ${state.me.name} (${state.me.email}): the organization is added to this account. To accept with another account, sign out first (the link stays usable in this tab).` })
      : h(
          "p",
          {},
          "Without an account yet: give your email, and one is made for you and signed in here. If you have an account with this email, ",
          h("button", { type: "button", id: "accept-sign-in", class: "link", text: "sign in first", onclick: () => showSignIn() }),
          ".",
        ),
    problem,
    form,
  );
  email.focus();
}

async function accept(event, secret, inputs, problem) {
  event.preventDefault();
  const body = { secret, email: inputs.email.value.trim() };
  if (inputs.name && inputs.name.value.trim()) body.name = inputs.name.value.trim();
  problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Accepting…" }));
  let answer;
  try {
    ({ body: answer } = await api("POST", "/v1/invitations/accept", { body, anonymous: !state.token }));
  } catch (error) {
    if (error.status === 401 && state.token) {
      endSessionOn(error);
      return;
    }
    clearFieldErrors(inputs);
    const said = error.body?.error?.message;
    // The refusals are the API's sentences ("this invitation cannot be
    // accepted: ...", "an account with this email exists: ..."): as is.
    if ((error.status === 404 || error.status === 409) && said) problem.replaceChildren(errorBox(said));
    else refusal(error, problem, inputs, "accept this invitation");
    return;
  }
  state.invitation = null;
  if (answer.api_token?.token) {
    state.token = answer.api_token.token;
    sessionStorage.setItem(TOKEN_KEY, state.token);
  }
  try {
    await refreshMe();
    await loadOrganizations();
  } catch (error) {
    if (endSessionOn(error)) return;
  }
  notify(`Welcome to ${organizationName(answer.organization_id)}: you are ${answer.role} there.`);
  history.replaceState(null, "", `#/projects?${query({ organization_id: answer.organization_id })}`);
  route();
}

// The rule of comparing revisions, for the cases both this console and
// the terminal run (tests/integration/console/): a module's export, so
// nothing is added to the page's globals.
export { revisionDiff };

// ----- Start -----

async function start() {
  $("sign-out").addEventListener("click", signOut);
  // Fires on Back, Forward and every change of the address's #part
  // (links, typing), never on our own pushState.
  window.addEventListener("popstate", route);
  // An invitation's link: its secret leaves the address before anything
  // else happens (a reload, the history, a screenshot of the bar).
  takeInvitationFromAddress();
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    route();
    return;
  }
  state.token = token;
  loading("your account");
  try {
    const { body } = await api("GET", "/v1/users/me");
    signedIn(body);
    route();
  } catch (error) {
    forgetToken();
    if (hashParams().path === "/accept") route();
    else showSignIn(explain(error));
  }
}

start();
