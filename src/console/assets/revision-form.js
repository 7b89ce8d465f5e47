// A new revision of a project's proxy settings: its description, backends
// and routes as rows (forms.js, each input named as the API names it, so
// that a refusal lands next to its field), a preview (`dry_run=true`: the
// API's own checks, and the diff against the active revision drawn by the
// diff page's own code), then "Save revision"; the saved revision's page
// offers to activate it, so saving never changes what the edges run.

import { api, createKeys, idempotencyKeyFor, roleIn } from "./api.js";
import { clearFieldErrors, field, h, loading, notify, show } from "./dom.js";
import { linesOf, rowList } from "./forms.js";
import { go, projectCrumbs, projectPath, revisionHash } from "./nav.js";
import { MEMBERS, activeRevision, comparison, fetchRevision, memberNote } from "./revisions.js";
import { loadOrganizations, refusal } from "./session.js";

/** What a dry run compares with when no revision is active (the API's
 * own: docs/management.md, "Dry runs"). */
const EMPTY = { description: "", backends: [], routes: [] };

/** Members of a backend that are text an edge reads only when set: left
 * empty, they are not sent (the API takes them absent as unset). */
const OPTIONAL_TEXT = ["override_host", "sni_hostname", "check_certificate", "ca_certificate"];

/** A route's lists of places, typed one a line. */
const PLACES = ["continent", "region", "country"];

const HINTS = {
  address: "origin.example.com or origin.example.com:8443; without a port, 443 with TLS, else 80",
  rank: "An integer; empty is 0",
  continent: "One a line: AF, AN, AS, EU, NA, OC, SA; none is any",
  region: "One a line, as the edges name them; none is any",
  country: "One a line, ISO codes (FR, DE…); none is any",
};

/** An input of a row: text (`textarea` for several lines) or a checkbox,
 * holding `value`; ids start with the row's `id`. */
function memberInput(id, member, value, kind = "text") {
  const attrs = { id: `${id}-${member}`, name: member, autocomplete: "off", spellcheck: "false", placeholder: HINTS[member] };
  if (kind === "checkbox") {
    const box = h("input", { ...attrs, type: "checkbox", placeholder: null });
    box.checked = value === true;
    return box;
  }
  // A textarea tall enough for what it holds, within reason.
  const lines = Array.isArray(value) ? value.length : String(value ?? "").split("\n").length;
  const input = kind === "lines" ? h("textarea", { ...attrs, rows: Math.min(member === "ca_certificate" ? 12 : 6, Math.max(2, lines)) }) : h("input", { ...attrs, type: "text" });
  input.value = Array.isArray(value) ? value.join("\n") : (value ?? "");
  return input;
}

/** The fields of a row, each labelled as the revision's page labels it. */
const rowFields = (kind, inputs) =>
  h(
    "div",
    { class: "row-fields" },
    Object.entries(inputs).map(([member, input]) =>
      h("div", { class: `row-field${input.type === "checkbox" ? " check" : ""}${member === "ca_certificate" ? " wide" : ""}` }, field(MEMBERS[kind][member], input, member)),
    ),
  );

function backendRow(item, id) {
  const inputs = {
    name: memberInput(id, "name", item.name),
    address: memberInput(id, "address", item.address),
    enable_ssl: memberInput(id, "enable_ssl", item.enable_ssl, "checkbox"),
    default: memberInput(id, "default", item.default, "checkbox"),
    override_host: memberInput(id, "override_host", item.override_host),
    sni_hostname: memberInput(id, "sni_hostname", item.sni_hostname),
    check_certificate: memberInput(id, "check_certificate", item.check_certificate),
    ca_certificate: memberInput(id, "ca_certificate", item.ca_certificate, "lines"),
  };
  inputs.name.setAttribute("aria-required", "true");
  inputs.address.setAttribute("aria-required", "true");
  const read = () => {
    const backend = { name: inputs.name.value.trim(), address: inputs.address.value.trim(), enable_ssl: inputs.enable_ssl.checked, default: inputs.default.checked };
    for (const member of OPTIONAL_TEXT) {
      const value = inputs[member].value;
      // A certificate is sent as laid out; one-line members trimmed.
      if (value.trim()) backend[member] = member === "ca_certificate" ? value : value.trim();
    }
    return backend;
  };
  return { node: rowFields("backend", inputs), inputs, read };
}

/** The backend a route goes to, chosen among the form's backends: each
 * option is a backend's row (its name input's id), so renaming a backend
 * keeps its routes on it; a removed one leaves the route to choose again. */
function backendChooser(backends) {
  const selects = new Set();
  const nameInputs = () =>
    Object.entries(backends.inputs())
      .filter(([param]) => param.endsWith(".name"))
      .map(([, input]) => input);
  const fill = (select, chosen) => {
    const names = nameInputs();
    select.replaceChildren(
      h("option", { value: "", text: "Choose a backend" }),
      ...names.map((input, index) => h("option", { value: input.id, text: input.value.trim() || `(backend ${index + 1} has no name yet)` })),
    );
    select.value = names.some((input) => input.id === chosen) ? chosen : "";
  };
  return {
    /** A select for a route's row, on the backend named `name` at first. */
    select(id, name) {
      const select = h("select", { id: `${id}-backend_name`, name: "backend_name" });
      fill(select, nameInputs().find((input) => input.value.trim() === name)?.id || "");
      selects.add(select);
      return select;
    },
    /** The chosen backend's name ("" when none is: the API says so). */
    nameOf: (select) => (select.value ? nameInputs().find((input) => input.id === select.value)?.value.trim() || "" : ""),
    /** Every route's options again, after backends changed. */
    refresh() {
      for (const select of selects) {
        if (select.isConnected) fill(select, select.value);
        else selects.delete(select);
      }
    },
  };
}

function routeRow(item, id, chooser) {
  const inputs = {
    path: memberInput(id, "path", item.path),
    regex: memberInput(id, "regex", item.regex, "checkbox"),
    backend_name: chooser.select(id, item.backend_name),
    rank: memberInput(id, "rank", item.rank),
    continent: memberInput(id, "continent", item.continent, "lines"),
    region: memberInput(id, "region", item.region, "lines"),
    country: memberInput(id, "country", item.country, "lines"),
  };
  inputs.path.setAttribute("aria-required", "true");
  inputs.rank.setAttribute("inputmode", "numeric");
  const read = () => {
    const route = { path: inputs.path.value, regex: inputs.regex.checked, backend_name: chooser.nameOf(inputs.backend_name) };
    const rank = inputs.rank.value.trim();
    if (rank) route.rank = rank;
    for (const member of PLACES) {
      const places = linesOf(inputs[member].value);
      if (places.length) route[member] = places;
    }
    return route;
  };
  return { node: rowFields("route", inputs), inputs, read };
}

/** `#/projects/ID/revisions/new`, `?from=N` to start from revision N: by
 * default from the active revision, or empty when none is. */
async function viewNewRevision([id], params, signal) {
  loading("the form");
  const from = params.get("from");
  if (from !== null && !/^[1-9]\d{0,9}$/.test(from)) {
    go(`#/projects/${encodeURIComponent(id)}/revisions/new`);
    return;
  }
  const [{ body: project }, base] = await Promise.all([
    api("GET", projectPath(id), { signal }),
    from ? fetchRevision(id, Number(from), signal) : activeRevision(id, signal),
    loadOrganizations(signal),
  ]);
  const start = base || { description: "", backends: [{ name: "origin", address: "", enable_ssl: true, default: true }], routes: [] };
  const stale = markStale();
  const description = h("input", { id: "revision-description", name: "description", autocomplete: "off" });
  description.value = start.description;
  const backends = rowList({
    param: "backends",
    itemName: "Backend",
    items: start.backends,
    makeRow: backendRow,
    blank: () => ({ name: "", address: "", enable_ssl: true, default: false }),
    addLabel: "Add a backend",
    onChange: () => {
      chooser.refresh();
      stale.mark();
    },
  });
  const chooser = backendChooser(backends);
  const routes = rowList({
    param: "routes",
    itemName: "Route",
    items: start.routes,
    makeRow: (item, rowId) => routeRow(item, rowId, chooser),
    blank: () => ({ path: "/", backend_name: backends.read().find((backend) => backend.default)?.name || backends.read()[0]?.name }),
    addLabel: "Add a route",
    onChange: () => stale.mark(),
  });
  const read = () => ({ description: description.value.trim(), backends: backends.read(), routes: routes.read() });
  const inputs = () => ({ description, ...backends.inputs(), ...routes.inputs() });
  const problem = h("div", { class: "form-problem" });
  const preview = h("section", { class: "card wide preview", id: "preview", "aria-labelledby": "s-preview", hidden: true });
  stale.watch(preview);
  const orgId = project.organization_id;
  const busy = (text) => {
    clearFieldErrors(inputs());
    problem.replaceChildren(h("p", { class: "loading", role: "status", text }));
  };

  const showPreview = async () => {
    busy("Asking the service…");
    try {
      const { body: answer } = await api("POST", `${projectPath(project.id)}/proxy-settings?dry_run=true`, { body: read(), signal });
      const number = answer.active_revision;
      const active = number === null ? null : base?.revision === number ? base : await fetchRevision(project.id, number, signal);
      problem.replaceChildren();
      preview.hidden = false;
      preview.replaceChildren(...previewOf(answer, active));
      stale.fresh();
      // Below the form: the focus takes keyboard and screen-reader users there.
      preview.focus();
    } catch (error) {
      refusal(error, problem, inputs(), "preview or create proxy settings revisions", orgId);
    }
  };
  const save = async () => {
    const body = read();
    busy("Saving…");
    try {
      const { body: made } = await api("POST", `${projectPath(project.id)}/proxy-settings`, { body, signal, headers: { "Idempotency-Key": idempotencyKeyFor(form, body) } });
      createKeys.delete(form);
      notify(
        made.is_active
          ? `Revision ${made.revision} of ${project.slug} was saved, and is active: it is the project's first.`
          : `Revision ${made.revision} of ${project.slug} was saved. It is not active: the edges run what they ran until you activate it.`,
      );
      go(revisionHash(project.id, made.revision));
    } catch (error) {
      refusal(error, problem, inputs(), "create proxy settings revisions", orgId);
    }
  };

  const form = h(
    "form",
    {
      class: "revision-form",
      "aria-label": "New revision",
      novalidate: true,
      // Enter previews: saving is a choice of its own.
      onsubmit: (event) => {
        event.preventDefault();
        showPreview();
      },
      oninput: () => stale.mark(),
      onchange: () => stale.mark(),
    },
    h("section", { class: "card wide" }, field("Description", description, "description")),
    h(
      "section",
      { class: "card wide", "aria-labelledby": "s-form-backends" },
      h("h2", { id: "s-form-backends", text: "Backends" }),
      h("p", { class: "muted", text: "Where the edges send requests. Names are unique; at most one is the default." }),
      backends.node,
    ),
    h(
      "section",
      { class: "card wide", "aria-labelledby": "s-form-routes" },
      h("h2", { id: "s-form-routes", text: "Routes" }),
      h("p", { class: "muted", text: "Evaluated from the lowest rank up; routes of one rank in this order." }),
      routes.node,
    ),
    h(
      "div",
      { class: "toolbar form-actions" },
      h("button", { type: "submit", class: "preview-button", text: "Preview" }),
      h("button", { type: "button", class: "save-button primary", text: "Save revision", onclick: save }),
      problem,
    ),
  );
  // A backend's name typed: its routes' choices say it at once.
  backends.node.addEventListener("input", (event) => {
    if (event.target.name === "name") chooser.refresh();
  });
  show(
    projectCrumbs(project, "New revision"),
    h("h1", { text: `New revision of ${project.slug}` }),
    h(
      "p",
      { class: "muted" },
      base ? `Starting from revision ${base.revision}${base.is_active ? " (active)" : ""}. ` : "Starting empty: the project has no active revision. ",
      "Preview asks the service to check it and shows what it would change; saving stores it without activating it (a project's first revision is active at once).",
    ),
    roleIn(orgId) === "member" ? h("p", { class: "muted", text: memberNote(project) }) : null,
    form,
    preview,
  );
}

/** The API's verdict on a dry run and the would-be revision against the
 * active one (`active`, or the empty revision), by the diff page's code. */
function previewOf(answer, active) {
  const { revision } = answer;
  const verdict = revision.is_active
    ? `The service accepts it. Saved, it would be revision ${revision.revision}, active at once: the project has no active revision.`
    : `The service accepts it. Saved, it would be revision ${revision.revision}, inactive: ${active ? `revision ${active.revision}` : "no revision"} stays active until you activate it.`;
  const before = active || EMPTY;
  const sides = [active ? `revision ${active.revision} (active)` : "no revision", "the new revision"];
  return [
    h("h2", { id: "s-preview", text: "Preview" }),
    h("p", { class: "stale-note", hidden: true, text: "The form changed after this preview: preview again to see what the service says now." }),
    h("p", { class: "verdict-line", text: verdict }),
    h("p", { text: before.description === revision.description ? `Description: “${revision.description}” (the same)` : `Description: “${before.description}” → “${revision.description}”` }),
    ...comparison(before, revision, sides, 3),
  ];
}

/** Whether the preview still says what the form holds: any edit after it
 * marks it stale (and says so) until the next preview. */
function markStale() {
  let preview = null;
  return {
    watch: (section) => {
      preview = section;
      section.setAttribute("tabindex", "-1");
    },
    mark: () => {
      if (!preview || preview.hidden || preview.dataset.stale === "true") return;
      preview.dataset.stale = "true";
      const note = preview.querySelector(".stale-note");
      if (note) note.hidden = false;
    },
    fresh: () => {
      if (preview) preview.dataset.stale = "false";
    },
  };
}

export { viewNewRevision };
