// Proxy settings on a project's page: the revisions' timeline with the
// edges' reports, activation, one revision's page (its backends and routes
// in full), and two revisions side by side (the comparison a new
// revision's preview shows too: revision-form.js).

import { ApiError, api, query, roleIn } from "./api.js";
import { $, confirmAction, count, errorBox, h, loadFailure, loading, notify, settingsList, show, yesNo } from "./dom.js";
import { go, projectCrumbs, projectPath, revisionHash } from "./nav.js";
import { backendKey, pairUp, reorderedRanks, routeKey, sameValue, verdictOf } from "./revision-diff.js";
import { rollOutControl } from "./rollouts.js";
import { endSessionOn, explain, loadOrganizations, organizationName } from "./session.js";

const newRevisionHash = (projectId, from) => `#/projects/${encodeURIComponent(projectId)}/revisions/new${from ? `?${query({ from })}` : ""}`;

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
    section.replaceChildren(heading, loadFailure(explain(error, "see the proxy settings"), () => showRevisions(project, section, signal, loaded, nextKey)));
    return;
  }
  const create = h("p", { class: "new-revision" }, h("a", { href: newRevisionHash(project.id), text: "New revision" }));
  if (!revisions.length) {
    const next =
      roleIn(project.organization_id) === "member"
        ? "The edges serve nothing for it until an editor or an admin of its organization makes one."
        : "The edges serve nothing for it until there is one: make the first (it is active at once).";
    section.replaceChildren(heading, h("p", { class: "empty", text: `No proxy settings revision yet. ${next}` }), create);
    return;
  }
  const { edges, more: moreEdges } = await readEdges(project.id, signal);
  if (signal.aborted) return;
  const role = roleIn(project.organization_id);
  const mayChange = role !== "member";
  const again = () => showRevisions(project, section, signal);
  const items = revisions.map((revision) =>
    h(
      "li",
      { class: revision.is_active ? "revision active" : "revision", "data-revision": revision.revision },
      h(
        "div",
        { class: "revision-head" },
        h("strong", {}, h("a", { href: revisionHash(project.id, revision.revision), text: `Revision ${revision.revision}` })),
        revision.is_active ? h("span", { class: "badge", text: "✓ Active" }) : h("span", { class: "muted", text: "inactive" }),
      ),
      h("p", { text: revision.description || "(no description)" }),
      h("p", { class: "muted", text: `${count(revision.backends.length, "backend")}, ${count(revision.routes.length, "route")}` }),
      ...edgeLines(edges, revision.revision),
      revision.is_active
        ? null
        : h("button", {
            type: "button",
            class: "activate",
            text: `Activate revision ${revision.revision}`,
            onclick: () => activate(project, revision, status, signal, again),
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
      ? h("p", { class: "muted", text: memberNote(project) })
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
    create,
    compare,
    h("ol", { class: "timeline", "aria-label": "Revisions, newest first" }, items),
    more ? h("button", { type: "button", text: "Load older revisions", onclick: () => showRevisions(project, section, signal, revisions, more) }) : null,
  ];
  section.replaceChildren(...parts.filter((part) => part !== null));
}

/** What a member may do here, in words: the API refuses the rest. */
const memberNote = (project) =>
  `Your role in ${organizationName(project.organization_id)} is member: you can read and compare revisions; creating or activating one needs an editor or an admin.`;

/** Who runs which revision (the edges' reports), a page of 100: those
 * that need attention first (failed, then stale), whatever their names.
 * A failure to read them shows none rather than failing the page. */
async function readEdges(projectId, signal) {
  try {
    const { body } = await api("GET", `${projectPath(projectId)}/edges?${query({ order: "attention", limit: 100 })}`, { signal });
    return { edges: body.data, more: body.has_more };
  } catch {
    // Aborted too: the caller checks its signal.
    return { edges: [], more: false };
  }
}

/** The edges that run (or failed to apply) revision `number`, at most
 * EDGES_SHOWN, failed ones first (the page's order), the rest counted. */
function edgeLines(edges, number) {
  const running = edges.filter((edge) => edge.revision === number && !edge.stale);
  const shown = running.slice(0, EDGES_SHOWN).map((edge) =>
    edge.status === "failed"
      ? h("p", { class: "edge failed", text: `Failed on ${edge.name}: ${edge.error}` })
      : h("p", { class: "edge", text: `Running on ${edge.name}` }),
  );
  if (running.length > EDGES_SHOWN) shown.push(h("p", { class: "edge more muted", text: `and ${running.length - EDGES_SHOWN} more` }));
  return shown;
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

/** Activates `revision` after a confirmation that says what changes, then
 * `then()` (the page shown again); a refusal is said in `status`. */
async function activate(project, revision, status, signal, then) {
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
    await then();
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
    `${projectPath(projectId)}/proxy-settings?${query({ limit: 1, order_direction: "ASC", start_key: number > 1 ? String(number - 1) : "" })}`,
    { signal },
  );
  const revision = body.data[0];
  if (!revision || revision.revision !== number) throw new ApiError(404, null, null, null);
  return revision;
}

/** The project's active revision, or null when none is: the listing
 * walked from the newest, 100 a page (the API has no filter for it; the
 * active one is most often on the first page). */
async function activeRevision(projectId, signal) {
  let start = "";
  for (;;) {
    const { body } = await api("GET", `${projectPath(projectId)}/proxy-settings?${query({ limit: 100, start_key: start })}`, { signal });
    const active = body.data.find((revision) => revision.is_active);
    if (active) return active;
    if (!body.has_more) return null;
    start = body.last_key;
  }
}

/** A backend's and a route's members, in the order they are shown,
 * compared and edited, each with its label: the revision's page and the
 * form (revision-form.js) say the same. */
const MEMBERS = {
  backend: {
    name: "Name",
    address: "Address (host, optionally :port)",
    enable_ssl: "TLS to the backend (enable_ssl)",
    default: "Default backend",
    override_host: "Host header sent (override_host)",
    sni_hostname: "SNI host name (sni_hostname)",
    check_certificate: "Certificate must name (check_certificate)",
    ca_certificate: "CA certificate, PEM (ca_certificate)",
  },
  route: {
    path: "Path",
    regex: "The path is a regex",
    backend_name: "Backend",
    rank: "Rank",
    continent: "Continents (codes)",
    region: "Edge regions",
    country: "Countries (codes)",
  },
};

/** A member's value for people: booleans Yes or No, lists joined (a
 * route's empty list of places is "any"), a certificate as it is laid
 * out; unset members are "not set" (settingsList). */
function memberValue(name, value) {
  if (typeof value === "boolean") return yesNo(value);
  if (Array.isArray(value)) return value.length ? value.join(", ") : "any";
  if (name === "ca_certificate" && value) return h("pre", { class: "pem", text: value });
  if (value === undefined || value === null || typeof value === "string") return value;
  return JSON.stringify(value);
}

/** Every member of a backend or a route, labelled, those MEMBERS does not
 * know by their API names after them. */
const memberList = (kind, item) =>
  settingsList([...new Set([...Object.keys(MEMBERS[kind]), ...Object.keys(item)])].map((name) => [MEMBERS[kind][name] || name, memberValue(name, item[name])]));

const routeTitle = (route) => `${route.path}${route.regex ? " (regex)" : ""}`;

/** One revision: its description, whether it is active, the edges that
 * run it, its backends and routes in full; activate it, start a new
 * revision from it, compare it. */
async function viewRevision([id, number], params, signal) {
  const n = Number(number);
  loading(`revision ${n}`);
  const [{ body: project }, revision, active] = await Promise.all([
    api("GET", projectPath(id), { signal }),
    fetchRevision(id, n, signal),
    activeRevision(id, signal),
    loadOrganizations(signal),
  ]);
  const { edges } = await readEdges(id, signal);
  if (signal.aborted) return;
  const status = h("div", { class: "revision-status" });
  const running = edgeLines(edges, n);
  const diffHash = (a, b) => `#/projects/${encodeURIComponent(project.id)}/diff/${a}/${b}`;
  const compareWith = [];
  if (active && active.revision !== n) compareWith.push(h("a", { href: diffHash(active.revision, n), text: `Compare with the active revision (${active.revision})` }));
  if (n > 1 && active?.revision !== n - 1) compareWith.push(h("a", { href: diffHash(n - 1, n), text: `Compare with revision ${n - 1}` }));
  show(
    projectCrumbs(project, `Revision ${n}`),
    h("h1", { text: `${project.slug}: revision ${n}` }),
    h(
      "p",
      { class: "revision-state" },
      revision.is_active
        ? h("span", { class: "badge", text: "✓ Active" })
        : h("span", { text: active ? `Inactive: revision ${active.revision} is the active one.` : "Inactive: the project has no active revision." }),
    ),
    h("p", { class: "description", text: revision.description || "(no description)" }),
    h("section", { class: "edges-on", "aria-label": "Edges running it" }, running.length ? running : h("p", { class: "muted", text: "No edge reports running this revision." })),
    roleIn(project.organization_id) === "member" ? h("p", { class: "muted", text: memberNote(project) }) : null,
    status,
    h(
      "div",
      { class: "toolbar revision-actions" },
      revision.is_active
        ? null
        : h("button", {
            type: "button",
            class: "activate primary",
            text: `Activate revision ${n}`,
            onclick: () => activate(project, revision, status, signal, () => viewRevision([id, number], params, signal)),
          }),
      // A rollout goes back to the active revision: none, nothing to roll out over.
      revision.is_active || !active || roleIn(project.organization_id) === "member" ? null : rollOutControl(project, revision, signal),
      h("a", { href: newRevisionHash(project.id, n), text: "New revision from this one" }),
      compareWith,
    ),
    h(
      "section",
      { class: "card wide", id: "backends", "aria-labelledby": "s-backends" },
      h("h2", { id: "s-backends", text: `Backends: ${revision.backends.length}` }),
      h(
        "ol",
        { class: "members" },
        revision.backends.map((backend) =>
          h("li", { class: "member", "data-backend": backend.name }, h("h3", { text: `${backend.name}${backend.default ? " (default)" : ""}` }), memberList("backend", backend)),
        ),
      ),
    ),
    h(
      "section",
      { class: "card wide", id: "routes", "aria-labelledby": "s-routes" },
      h("h2", { id: "s-routes", text: `Routes: ${revision.routes.length}` }),
      h("p", { class: "muted", text: "Evaluated from the lowest rank up; routes of one rank in this order." }),
      revision.routes.length
        ? h(
            "ol",
            { class: "members" },
            revision.routes.map((route, index) =>
              h("li", { class: "member", "data-route": index + 1 }, h("h3", { text: `${index + 1}. ${routeTitle(route)} → ${route.backend_name}` }), memberList("route", route)),
            ),
          )
        : h("p", { class: "empty", text: "No routes." }),
    ),
  );
}

const shownValue = (value) => (value === undefined ? "not set" : typeof value === "string" ? value : JSON.stringify(value));

/** One side of a pair: its members a line each, lines that differ from
 * the other side marked with "~" (and words for screen readers); `label`
 * names the side ("revision 3"). */
function side(kind, item, other, label) {
  // Which side this is, said on a phone where the sides stack (left above
  // right) and "Left:"/"Right:" no longer tell.
  const which = h("p", { class: "side-label", text: label[0].toUpperCase() + label.slice(1) });
  if (!item) return h("div", { class: "side missing" }, which, h("p", { class: "muted", text: `not in ${label}` }));
  const fields = [...new Set([...Object.keys(MEMBERS[kind]), ...Object.keys(item), ...Object.keys(other || {})])];
  return h(
    "div",
    { class: "side" },
    which,
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
 * `label` names an item, `sides` the two sides; headings from `level`. */
function diffRows(kind, title, pairs, label, sides, level) {
  const counts = { added: 0, removed: 0, changed: 0, unchanged: 0 };
  const rows = pairs.map((pair) => {
    const verdict = verdictOf(pair);
    counts[verdict] += 1;
    const sigil = { added: "+", removed: "−", changed: "~", unchanged: "=" }[verdict];
    return h(
      "div",
      { class: `diff-row ${verdict}`, "data-verdict": verdict },
      h(`h${level + 1}`, {}, h("span", { class: "sigil", "aria-hidden": "true", text: sigil }), `${kind} ${label(pair.a || pair.b)} `, h("span", { class: "verdict", text: `(${verdict})` })),
      h("div", { class: "sides" }, side(kind, pair.a, pair.b, sides[0]), side(kind, pair.b, pair.a, sides[1])),
    );
  });
  const summary = Object.entries(counts)
    .filter(([, n]) => n)
    .map(([verdict, n]) => `${n} ${verdict}`)
    .join(", ");
  // Named by its whole heading, not `title` alone: a new revision's form
  // beside its preview has sections named "Backends" and "Routes" too.
  const heading = `${title}: ${summary || "none"}`;
  return h("section", { class: "diff", "aria-label": heading }, h(`h${level}`, { text: heading }), rows);
}

/** What changed from `from` to `to` by the rule the terminal shares
 * (revision-diff.js), as the diff page and a new revision's preview show
 * it: the legend, the backends, the routes and the reordered ranks.
 * `sides` names them ("revision 3", "the new revision"); the parts'
 * headings are of `level`. */
function comparison(from, to, sides, level = 2) {
  const routes = pairUp(from.routes, to.routes, routeKey);
  return [
    h("p", { class: "legend", text: `Left (above, on a narrow screen): ${sides[0]}. Right: ${sides[1]}. Marks: + added, − removed, ~ changed, = unchanged.` }),
    diffRows("backend", "Backends", pairUp(from.backends, to.backends, backendKey), (backend) => backend.name, sides, level),
    diffRows("route", "Routes", routes, routeTitle, sides, level),
    ...reorderedRanks(routes).map((reordered) =>
      h("p", { class: "diff-row changed reordered" }, h("span", { class: "sigil", "aria-hidden": "true", text: "~ " }), `Routes of rank ${shownValue(reordered.rank)}, evaluated in the order of the list: ${reordered.from.join(", ")} → ${reordered.to.join(", ")}`),
    ),
  ];
}

async function viewDiff([id, first, second], _, signal) {
  const a = Number(first);
  const b = Number(second);
  loading(`revisions ${a} and ${b}`);
  const [{ body: project }, left, right] = await Promise.all([api("GET", projectPath(id), { signal }), fetchRevision(id, a, signal), fetchRevision(id, b, signal)]);
  const header = (revision) =>
    h(
      "div",
      { class: "side-head" },
      h("strong", {}, h("a", { href: revisionHash(project.id, revision.revision), text: `Revision ${revision.revision}` })),
      revision.is_active ? h("span", { class: "badge", text: "✓ Active" }) : null,
      h("p", { text: revision.description }),
    );
  show(
    projectCrumbs(project),
    h("h1", { text: `${project.slug}: revision ${a} against revision ${b}` }),
    h("p", {}, h("a", { href: `#/projects/${encodeURIComponent(project.id)}/diff/${b}/${a}`, text: "Swap sides" })),
    h("div", { class: "sides heads" }, header(left), header(right)),
    comparison(left, right, [`revision ${a}`, `revision ${b}`]),
  );
}

export { MEMBERS, activeRevision, comparison, fetchRevision, memberNote, showRevisions, viewDiff, viewRevision };
