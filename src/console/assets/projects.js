// Projects: the listing (filter, order, find by slug) and one project's
// page (its settings in groups, then its domains and proxy settings).

import { PAGE_SIZE, api, query, roleIn, state } from "./api.js";
import { errorBox, h, loading, settings, show, when, yesNo } from "./dom.js";
import { showDomains } from "./domains.js";
import { go, pager } from "./nav.js";
import { showRevisions } from "./revisions.js";
import { endSessionOn, explain, loadOrganizations, organizationName } from "./session.js";

// A slug search walks the caller's projects a page of 100 at a time;
// beyond this many pages it stops and asks to narrow by organization.
const FIND_PAGES = 50;

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

export { viewProject, viewProjects };
