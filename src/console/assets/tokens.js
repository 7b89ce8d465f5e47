// API tokens: the caller's, creating one (its secret shown once) and
// revoking one.

import { PAGE_SIZE, api, query, state } from "./api.js";
import { confirmAction, copyButton, errorBox, h, loading, notify, show, when } from "./dom.js";
import { pager, route } from "./nav.js";
import { endSessionOn, explain } from "./session.js";

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
    : h("p", { class: "empty", text: start ? "No more tokens." : "No token yet: create one above." });
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

export { viewTokens };
