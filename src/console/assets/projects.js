// Projects: the listing (filter, order, find by slug) and one project's
// page (its settings in groups, then its domains and proxy settings);
// changing them is project-edit.js's.

import { PAGE_SIZE, api, query, roleIn, state } from "./api.js";
import { errorBox, h, loading, settings, show, when } from "./dom.js";
import { showDomains } from "./domains.js";
import { go, pager } from "./nav.js";
import { deleteProjectCard, readOnlyNote } from "./project-edit.js";
import { GROUPS, settingsWords } from "./project-form.js";
import { showRevisions } from "./revisions.js";
import { showRollouts } from "./rollouts.js";
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

  // "New project" starts in the organization the listing is filtered on.
  const newHash = state.organizations.size ? `#/projects/new${organization ? `?${query({ organization_id: organization })}` : ""}` : "";
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
    : h(
        "p",
        { class: "empty" },
        start ? "No more projects." : "No projects here yet.",
        !start && newHash ? [" ", h("a", { href: newHash, id: "empty-new-project", text: "Create one" }), "."] : null,
      );
  show(
    h("h1", { text: "Projects" }),
    state.organizations.size
      ? h("p", { class: "toolbar" }, h("a", { href: newHash, class: "button", id: "new-project-link", text: "New project" }))
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

/** A title inside a sentence: "Caching" -> "caching", "IP rules" stays. */
const inSentence = (title) => (/^[A-Z]{2}/.test(title) ? title : title[0].toLowerCase() + title.slice(1));

async function viewProject([id], _, signal) {
  loading("the project");
  const [{ body: project, etag }] = await Promise.all([
    api("GET", `/v1/projects/${encodeURIComponent(id)}`, { signal }),
    loadOrganizations(signal),
  ]);
  const mayChange = roleIn(project.organization_id) !== "member";
  const editHash = `#/projects/${encodeURIComponent(project.id)}/edit`;
  const sections = GROUPS.map((group) => {
    let pairs = settingsWords(group, project);
    if (group.id === "overview") {
      pairs = [
        ["Organization", organizationName(project.organization_id)],
        ["Your role there", roleIn(project.organization_id)],
        ["Id", project.id],
        ...pairs,
        ["Avatar address", project.avatar_url],
        ["Created", when(project.created_at)],
        ["Updated", when(project.updated_at)],
      ];
    }
    const card = settings(`s-${group.id}`, group.title, pairs);
    if (mayChange) {
      card.append(h("p", { class: "card-actions" }, h("a", { href: `${editHash}?group=${group.id}`, class: "edit-group", text: `Edit ${inSentence(group.title)}` })));
    }
    return card;
  });
  const domains = h("section", { class: "card wide", id: "domains", "aria-labelledby": "s-domains" }, h("h2", { id: "s-domains", text: "Domains" }));
  const revisions = h("section", { class: "card wide", id: "revisions", "aria-labelledby": "s-revisions" }, h("h2", { id: "s-revisions", text: "Proxy settings" }));
  const rollouts = h("section", { class: "card wide", id: "rollouts", "aria-labelledby": "s-rollouts" }, h("h2", { id: "s-rollouts", text: "Rollouts" }));
  show(
    h("p", { class: "crumbs" }, h("a", { href: "#/projects", text: "Projects" }), " / ", organizationName(project.organization_id)),
    h("h1", { text: project.slug }),
    mayChange
      ? h("p", { class: "toolbar" }, h("a", { href: editHash, class: "button", id: "edit-project-link", text: "Edit settings" }))
      : readOnlyNote(project.organization_id, "changing or deleting one"),
    h("div", { class: "grid" }, sections),
    domains,
    rollouts,
    revisions,
    mayChange ? deleteProjectCard(project, etag, signal) : null,
  );
  await Promise.all([showDomains(project, domains, signal), showRollouts(project, rollouts, signal), showRevisions(project, revisions, signal)]);
}

export { viewProject, viewProjects };
