// Custom domains on a project's page: where each one's DNS proof stands,
// checking one now, adding and removing.

import { api, query, roleIn } from "./api.js";
import { confirmAction, copyButton, errorBox, h, loadFailure, notify, when } from "./dom.js";
import { endSessionOn, explain, organizationName } from "./session.js";

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
    section.replaceChildren(heading, loadFailure(explain(error, "see the domains"), () => showDomains(project, section, signal)));
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
          h("button", { type: "button", class: "check-now", text: "Check now", "aria-label": `Check now: ${domain.name}`, onclick: () => checkDomain(project, domain, item, signal) }),
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

export { showDomains };
