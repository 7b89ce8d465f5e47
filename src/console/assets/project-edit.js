// Changing projects: the "New project" page, the edit page (every setting
// the project's page shows, in the same groups) and deleting one. Saves
// send only the members the person changed, with `If-Match`: when someone
// else saved the project meanwhile, nothing is overwritten; the page says
// what they changed and keeps the person's edits for a deliberate save.

import { api, createKeys, idempotencyKeyFor, roleIn, state } from "./api.js";
import { clearFieldErrors, errorBox, field, fieldErrors, h, loading, notify, show } from "./dom.js";
import { go } from "./nav.js";
import { DEFAULTS, GROUPS, MEMBERS, changedMembers, inWords, settingsForm } from "./project-form.js";
import { endSessionOn, explain, loadOrganizations, organizationName, refusal } from "./session.js";

const projectPath = (id) => `/v1/projects/${encodeURIComponent(id)}`;

const projectHash = (id) => `#/projects/${encodeURIComponent(id)}`;

/** Why someone with the `member` role sees no form: said where the form
 * would be (docs/console.md, "Who sees what controls"). */
const readOnlyNote = (organizationId, what) =>
  h("p", {
    class: "notice-inline read-only",
    text: `Your role in ${organizationName(organizationId)} is member: you can read its projects; ${what} needs an editor or an admin.`,
  });

/** Problems found before sending (a conditions field that is no JSON),
 * in the shape of the API's refusals, so `refusal` says them at their
 * fields the same way. */
const notSent = (params) => ({ name: "Problem", status: 400, body: { error: { message: "", params } } });

const labelsOf = (names) => names.map((name) => MEMBERS.get(name).label).join(", ");

/** A refusal said at the fields, with the top of the form's `problem`
 * brought into view when no field took the focus (a 403, a 409). Each
 * line of a one-a-line list the API names (`trusted_ips[1]`, the second
 * written) is quoted, since the person counts lines, not indexes. */
function refused(error, problem, inputs, sent, action, organizationId) {
  for (const p of error.body?.error?.params || []) {
    const [, name, index] = /^([a-z_]+)\[(\d+)\]$/.exec(p.param) || [];
    if (MEMBERS.get(name)?.kind.oneALine && typeof sent[name]?.[index] === "string") p.message = `(“${sent[name][index]}”) ${p.message}`;
  }
  const focused = document.activeElement;
  refusal(error, problem, inputs, action, organizationId);
  if (document.activeElement === focused) problem.scrollIntoView({ block: "nearest" });
}

/** What changed between two reads of a project, member by member, in
 * words: "Description: was “…”, now “…”". `mine` (members the person
 * changed, with their values) adds what a save would put instead. */
function changesBetween(before, after, mine = {}) {
  const changed = [...MEMBERS.keys()].filter((name) => JSON.stringify(before[name]) !== JSON.stringify(after[name]));
  if (!changed.length) {
    return h("p", { class: "changes-none", text: "None of its settings changed (something else of it did, such as a domain): its version moved on." });
  }
  return h(
    "ul",
    { class: "changes" },
    changed.map((name) => {
      const { label, group } = MEMBERS.get(name);
      return h(
        "li",
        { "data-member": name },
        h("strong", { text: `${label}` }),
        ` (${group.title}): was “${inWords(name, before[name])}”, now “${inWords(name, after[name])}”.`,
        name in mine ? h("span", { class: "yours", text: ` You changed it too: saving puts yours, “${inWords(name, mine[name])}”.` }) : null,
      );
    }),
  );
}

/** `#/projects/new`: the organization, then the same groups as the edit
 * page, starting from the API's defaults; only what differs is sent. */
async function viewNewProject(_, params, signal) {
  loading("the form");
  await loadOrganizations(signal);
  const organizations = [...state.organizations.values()];
  const crumbs = h("p", { class: "crumbs" }, h("a", { href: "#/projects", text: "Projects" }), " / New");
  const heading = h("h1", { text: "New project" });
  const writable = organizations.filter((o) => roleIn(o.id) !== "member");
  if (!writable.length) {
    show(
      crumbs,
      heading,
      organizations.length
        ? h("p", { class: "notice-inline read-only", text: "Your role is member in each of your organizations: creating a project needs an editor or an admin there." })
        : h("p", { class: "notice-inline" }, "You are in no organization yet: ", h("a", { href: "#/organizations", text: "create one" }), " first, or open the link of an invitation."),
    );
    return;
  }
  const wanted = params.get("organization_id");
  const chosen = organizations.some((o) => o.id === wanted) ? wanted : writable[0].id;
  const organization = h(
    "select",
    { id: "new-organization", name: "organization_id" },
    organizations.map((o) => h("option", { value: o.id, selected: o.id === chosen, text: `${o.name} (${roleIn(o.id)})` })),
  );
  const editor = settingsForm(DEFAULTS, "new");
  const baseline = editor.read();
  editor.cards[0].querySelector(".form-fields").prepend(field("Organization", organization, "organization_id"));
  const problem = h("div", { class: "form-problem", id: "create-problem" });
  const status = h("span", { class: "muted", role: "status", id: "create-status" });
  const form = h(
    "form",
    {
      id: "create-project",
      class: "settings-form",
      novalidate: true,
      "aria-labelledby": "new-title",
      onsubmit: async (event) => {
        event.preventDefault();
        const inputs = { organization_id: organization, ...editor.inputs() };
        const problems = editor.problems();
        if (problems.length) {
          refused(notSent(problems), problem, inputs, {});
          return;
        }
        const now = editor.read();
        const body = { organization_id: organization.value, slug: now.slug };
        for (const name of changedMembers(now, baseline)) body[name] = now[name];
        status.textContent = "Creating…";
        try {
          const { body: made } = await api("POST", "/v1/projects", { body, signal, headers: { "Idempotency-Key": idempotencyKeyFor(form, body) } });
          createKeys.delete(form);
          notify(`${made.slug} was created in ${organizationName(made.organization_id)}. Its proxy settings come next: it has no revision yet.`);
          go(projectHash(made.id));
        } catch (error) {
          status.textContent = "";
          refused(error, problem, inputs, body, "create projects", organization.value);
        }
      },
    },
    problem,
    editor.cards,
    h("div", { class: "form-actions" }, h("button", { type: "submit", class: "primary", id: "create-project-button", text: "Create project" }), h("a", { href: "#/projects", text: "Cancel" }), status),
  );
  heading.id = "new-title";
  show(
    crumbs,
    heading,
    h("p", { class: "muted", text: "The organization and a slug (a-z, 0-9 and -, unique in the organization) are needed; every other setting starts as the service sets it and can be changed later." }),
    form,
  );
}

/** `#/projects/ID/edit[?group=caching]`: every setting in its group, the
 * group asked for scrolled to. */
async function viewEditProject([id], params, signal) {
  loading("the project");
  const [{ body: project, etag }] = await Promise.all([api("GET", projectPath(id), { signal }), loadOrganizations(signal)]);
  const heading = h("h1", { id: "edit-title", text: `Edit ${project.slug}` });
  const crumbs = h(
    "p",
    { class: "crumbs" },
    h("a", { href: "#/projects", text: "Projects" }),
    " / ",
    h("a", { href: projectHash(project.id), text: project.slug }),
    " / Edit",
  );
  if (roleIn(project.organization_id) === "member") {
    show(crumbs, heading, readOnlyNote(project.organization_id, "changing one"), h("p", {}, h("a", { href: projectHash(project.id), text: `Back to ${project.slug}` })));
    return;
  }
  // What the form was built from (`loaded`, its ETag) and the form's
  // values then (`baseline`): a save sends what differs from it.
  const page = { loaded: project, etag, editor: null, baseline: null };
  const groups = h("div", { class: "edit-groups" });
  const build = (values) => {
    page.editor = settingsForm(values, "edit");
    groups.replaceChildren(...page.editor.cards);
  };
  build(project);
  page.baseline = page.editor.read();
  const conflict = h("div", { id: "conflict" });
  const problem = h("div", { class: "form-problem", id: "save-problem" });
  const status = h("span", { class: "muted", role: "status", id: "save-status" });
  const save = h("button", { type: "submit", class: "primary", id: "save-project", text: "Save changes" });
  const form = h(
    "form",
    {
      id: "edit-project",
      class: "settings-form",
      novalidate: true,
      "aria-labelledby": "edit-title",
      onsubmit: async (event) => {
        event.preventDefault();
        const inputs = page.editor.inputs();
        const problems = page.editor.problems();
        if (problems.length) {
          refused(notSent(problems), problem, inputs, {});
          return;
        }
        const now = page.editor.read();
        const mine = changedMembers(now, page.baseline);
        clearFieldErrors(inputs);
        problem.replaceChildren();
        if (!mine.length) {
          status.textContent = "Nothing to save: every setting is as it was loaded.";
          return;
        }
        const body = Object.fromEntries(mine.map((name) => [name, now[name]]));
        status.textContent = "Saving…";
        try {
          const headers = page.etag ? { "If-Match": page.etag } : {};
          const { body: saved } = await api("POST", projectPath(project.id), { body, signal, headers });
          notify(`${saved.slug} was saved: ${labelsOf(mine)}.`);
          go(projectHash(saved.id));
        } catch (error) {
          status.textContent = "";
          if (error.status === 412) await conflictOn(page, body, { build, conflict, problem, save, heading, signal });
          else refused(error, problem, inputs, body, "change projects", project.organization_id);
        }
      },
    },
    problem,
    groups,
    h("div", { class: "form-actions" }, save, h("a", { href: projectHash(project.id), text: "Cancel" }), status),
  );
  show(
    crumbs,
    heading,
    h("p", { class: "muted", text: "Only the settings you change are sent. If someone else saves this project while you edit it, nothing of theirs is overwritten: you see what they changed, and save again if you still want yours." }),
    conflict,
    form,
  );
  const group = GROUPS.find((g) => g.id === params.get("group"));
  if (group) {
    const card = document.getElementById(`edit-${group.id}`);
    card.scrollIntoView();
    card.querySelector("input, select, textarea")?.focus({ preventScroll: true });
  }
}

/** A save refused with 412: the project is read again, what changed
 * since the form was loaded is listed, and the form is rebuilt on the new
 * version with the person's changes (`mine`) kept over it. The next save
 * sends those on the new ETag: deliberately, after reading the list. */
async function conflictOn(page, mine, { build, conflict, problem, save, heading, signal }) {
  let fresh;
  try {
    fresh = await api("GET", projectPath(page.loaded.id), { signal });
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    problem.replaceChildren(errorBox(error.status === 404 ? `${page.loaded.slug} was deleted meanwhile: there is nothing to save to.` : explain(error, "see this project")));
    problem.scrollIntoView({ block: "nearest" });
    return;
  }
  const before = page.loaded;
  page.loaded = fresh.body;
  page.etag = fresh.etag;
  page.baseline = settingsForm(fresh.body, "baseline").read();
  build({ ...fresh.body, ...mine });
  heading.textContent = `Edit ${fresh.body.slug}`;
  save.textContent = "Save my changes over theirs";
  problem.replaceChildren();
  const title = h("h2", { id: "conflict-title", tabindex: "-1", text: `Someone else saved ${fresh.body.slug} while you were editing it: nothing of yours was saved` });
  conflict.replaceChildren(
    h(
      "section",
      { class: "card conflict", role: "alert", "aria-labelledby": "conflict-title" },
      title,
      h("p", { text: "What they changed, as it was when you opened this page and as it is now:" }),
      changesBetween(before, fresh.body, mine),
      h("p", {
        class: "yours-kept",
        text: `Your changes are still in the form (${labelsOf(Object.keys(mine))}); the rest of it now shows their version. “Save my changes over theirs” sends only yours, on top of theirs.`,
      }),
    ),
  );
  title.focus();
}

/** The end of a project's page for editors and admins: deleting it, once
 * its slug is typed, with `If-Match` (the page's ETag). */
function deleteProjectCard(project, etag, signal) {
  const page = { project, etag };
  const slug = project.slug;
  const typed = h("input", { id: "delete-slug", name: "slug", type: "text", autocomplete: "off", spellcheck: "false" });
  const problem = h("div", { class: "form-problem", id: "delete-problem" });
  const changed = h("div", { id: "delete-changed" });
  const open = h("button", { type: "button", class: "danger", id: "delete-open", text: `Delete ${slug}…` });
  const cancel = h("button", { type: "button", id: "delete-cancel", text: "Cancel" });
  const form = h(
    "form",
    {
      id: "delete-project",
      class: "toolbar",
      novalidate: true,
      hidden: true,
      "aria-label": `Delete ${slug}`,
      onsubmit: async (event) => {
        event.preventDefault();
        const said = fieldErrors.get(typed);
        clearFieldErrors({ typed });
        problem.replaceChildren();
        if (typed.value.trim() !== slug) {
          said.textContent = `Type ${slug} exactly to delete it: nothing was deleted.`;
          typed.setAttribute("aria-invalid", "true");
          typed.focus();
          return;
        }
        problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Deleting…" }));
        try {
          const headers = page.etag ? { "If-Match": page.etag } : {};
          await api("DELETE", projectPath(project.id), { signal, headers });
          notify(`${slug} was deleted, with its proxy-settings revisions and its domains.`);
          go("#/projects");
        } catch (error) {
          if (error.status !== 412) {
            refusal(error, problem, {}, "delete projects", project.organization_id);
            return;
          }
          // Changed since the page was read: say what, and ask again.
          try {
            const fresh = await api("GET", projectPath(project.id), { signal });
            changed.replaceChildren(
              h(
                "div",
                { class: "conflict", role: "alert" },
                h("p", {}, h("strong", { text: `Nothing was deleted: ${slug} changed since you opened this page.` }), " What changed:"),
                changesBetween(page.project, fresh.body),
                h("p", { text: `Type ${slug} again to delete it as it is now.` }),
              ),
            );
            page.project = fresh.body;
            page.etag = fresh.etag;
            typed.value = "";
            problem.replaceChildren();
            typed.focus();
          } catch (again) {
            refusal(again, problem, {}, "see this project", project.organization_id);
          }
        }
      },
    },
    h(
      "p",
      { class: "warning" },
      h("strong", { text: "This cannot be undone. " }),
      `${slug} leaves every listing at once, with its proxy-settings revisions and its custom domains (they stop routing to it); the edges drop its configuration as soon as they follow the change. Its slug is free again.`,
    ),
    changed,
    field(`Type ${slug} to confirm`, typed, "slug"),
    h("div", { class: "actions-row" }, h("button", { type: "submit", class: "danger", id: "delete-confirm", text: `Delete ${slug}` }), cancel),
    problem,
  );
  typed.addEventListener("input", () => clearFieldErrors({ typed }));
  open.addEventListener("click", () => {
    form.hidden = false;
    open.hidden = true;
    typed.focus();
  });
  cancel.addEventListener("click", () => {
    form.hidden = true;
    open.hidden = false;
    typed.value = "";
    clearFieldErrors({ typed });
    changed.replaceChildren();
    problem.replaceChildren();
    open.focus();
  });
  return h(
    "section",
    { class: "card wide danger-zone", id: "delete", "aria-labelledby": "s-delete" },
    h("h2", { id: "s-delete", text: "Delete this project" }),
    open,
    form,
  );
}

export { deleteProjectCard, readOnlyNote, viewEditProject, viewNewProject };
