// Signing in and out, the caller's organizations, and refusals put in
// words (a page that could not load, a form's fields the API named).

import { TOKEN_KEY, api, query, roleIn, state } from "./api.js";
import { $, clearFieldErrors, errorBox, fieldErrors, h, loadFailure, notify, show } from "./dom.js";
import { route } from "./nav.js";

// Organizations read for names and the filter: up to 10 pages of 100.
const ORGANIZATION_PAGES = 10;

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

/** A view that could not load: what went wrong and a way to try again. */
function failed(title, error) {
  if (endSessionOn(error)) return;
  show(h("h1", { text: title }), loadFailure(explain(error, "see this"), route));
}

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
      "A token made with ",
      h("code", { text: "proxydeck admin token create" }),
      " or in this console. It stays in this tab only and is forgotten when you sign out or close the tab.",
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
    const input = inputFor(inputs, p.param);
    const said = input && fieldErrors.get(input);
    if (said) {
      const words = `${p.param} ${p.message}`;
      said.textContent = said.textContent ? `${said.textContent}; ${words}` : words;
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

/** The input the API's `param` names, or the nearest one that holds it:
 * `routes[2].country[0]` is said next to `routes[2].country`. */
function inputFor(inputs, param) {
  for (let name = param; name; name = name.replace(/(\[\d+\]|\.[^.[\]]*)$/, "")) {
    if (inputs[name]) return inputs[name];
    if (!/(\[\d+\]|\.[^.[\]]*)$/.test(name)) break;
  }
  return undefined;
}

/** The caller again (its roles), and the organizations read afresh: after
 * it joined, created or left one. */
async function refreshMe(signal) {
  const { body } = await api("GET", "/v1/users/me", { signal });
  signedIn(body);
  state.organizations = null;
  return body;
}

export { endSessionOn, explain, failed, forgetToken, loadOrganizations, organizationName, refreshMe, refusal, showSignIn, signedIn, signOut };
