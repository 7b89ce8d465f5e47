// Teams: organizations, their members and invitations.

import { api, createKeys, idempotencyKeyFor, query, roleIn, state } from "./api.js";
import { clearFieldErrors, confirmAction, copyButton, errorBox, field, h, loadFailure, loading, notify, settings, show, when } from "./dom.js";
import { go, pager, route } from "./nav.js";
import { endSessionOn, explain, loadOrganizations, refreshMe, refusal } from "./session.js";

// docs/teams.md: any user creates an organization (and is its admin);
// admins rename and delete it, change roles, remove members and invite
// people; any member reads the members and may leave. The API decides:
// the console shows admins' controls to admins only, and every refusal
// in the API's own words.

const ROLES = ["admin", "editor", "member"];

const MEMBERS_PAGE = 20;

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
    section.replaceChildren(heading, loadFailure(explain(error, "see the members", organization.id), () => showMembers(page, section, start, signal)));
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
  if (!loaded.length) list.replaceChildren(h("p", { class: "loading", role: "status", text: "Loading invitations…" }));
  try {
    const { body } = await api("GET", `/v1/invitations?${query({ organization_id: organization.id, limit: 100, start_key: start })}`, { signal });
    invitations = [...loaded, ...body.data];
    more = body.has_more ? body.last_key : "";
  } catch (error) {
    if (error.name === "AbortError" || endSessionOn(error)) return;
    list.replaceChildren(loadFailure(explain(error, "see the invitations", organization.id), () => listInvitations(page, list, signal, loaded, start)));
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
        : h("p", { class: "empty", text: "No invitation waits to be accepted: invite someone with the form above." }),
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

export { viewOrganization, viewOrganizations };
