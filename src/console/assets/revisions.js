// Proxy settings on a project's page: the revisions' timeline with the
// edges' reports, activation, and two revisions side by side.

import { ApiError, api, query, roleIn } from "./api.js";
import { $, confirmAction, count, errorBox, h, loading, notify, show } from "./dom.js";
import { go } from "./nav.js";
import { backendKey, pairUp, reorderedRanks, routeKey, sameValue, verdictOf } from "./revision-diff.js";
import { endSessionOn, explain, organizationName } from "./session.js";

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
      h("p", { class: "muted", text: `${count(revision.backends.length, "backend")}, ${count(revision.routes.length, "route")}` }),
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

export { showRevisions, viewDiff };
