// Accepting an invitation (`#/accept?invitation=SECRET`), signed in or
// not.

import { TOKEN_KEY, api, query, state } from "./api.js";
import { clearFieldErrors, errorBox, field, h, notify, show } from "./dom.js";
import { hashParams, route } from "./nav.js";
import { endSessionOn, loadOrganizations, organizationName, refreshMe, refusal, showSignIn } from "./session.js";

/** Takes the invitation's secret out of the address at once: it stays in
 * memory only (not in history, not in the markup). */
function takeInvitationFromAddress() {
  const { path, params } = hashParams();
  if (path === "/accept" && params.has("invitation")) {
    state.invitation = params.get("invitation");
    history.replaceState(null, "", "#/accept");
  }
}

function viewAccept() {
  const secret = state.invitation;
  if (!secret) {
    show(
      h("h1", { text: "Accept an invitation" }),
      h("p", { text: "This page needs the link of your invitation. Open the link from the invitation again; if it no longer works, ask an admin of the organization for a new one." }),
      // Signed out, the way on is signing in (the projects' address asks for it).
      h("p", {}, h("a", { href: "#/projects", text: state.token ? "Go to your projects" : "Sign in to your account" })),
    );
    return;
  }
  const email = h("input", { id: "accept-email", name: "email", type: "email", required: true, autocomplete: "email", spellcheck: "false" });
  const name = h("input", { id: "accept-name", name: "name", maxlength: 200, autocomplete: "name" });
  if (state.me) email.value = state.me.email;
  const problem = h("div", { id: "accept-problem" });
  const inputs = state.token ? { email } : { email, name };
  const form = h(
    "form",
    { class: "card sign-in", id: "accept", "aria-label": "Accept the invitation", onsubmit: (event) => accept(event, secret, inputs, problem) },
    field("Your email (the one the invitation was sent to)", email, "email"),
    state.token ? null : field("Your name, for a new account (optional)", name, "name"),
    h("button", { type: "submit", class: "primary", text: "Accept the invitation" }),
  );
  show(
    h("h1", { text: "Accept an invitation" }),
    state.me
      ? h("p", { text: `You are signed in as ${state.me.name} (${state.me.email}): the organization is added to this account. To accept with another account, sign out first (the link stays usable in this tab).` })
      : h(
          "p",
          {},
          "Without an account yet: give your email, and one is made for you and signed in here. If you have an account with this email, ",
          h("button", { type: "button", id: "accept-sign-in", class: "link", text: "sign in first", onclick: () => showSignIn() }),
          ".",
        ),
    problem,
    form,
  );
  email.focus();
}

async function accept(event, secret, inputs, problem) {
  event.preventDefault();
  const body = { secret, email: inputs.email.value.trim() };
  if (inputs.name && inputs.name.value.trim()) body.name = inputs.name.value.trim();
  problem.replaceChildren(h("p", { class: "loading", role: "status", text: "Accepting…" }));
  let answer;
  try {
    ({ body: answer } = await api("POST", "/v1/invitations/accept", { body, anonymous: !state.token }));
  } catch (error) {
    if (error.status === 401 && state.token) {
      endSessionOn(error);
      return;
    }
    clearFieldErrors(inputs);
    const said = error.body?.error?.message;
    // The refusals are the API's sentences ("this invitation cannot be
    // accepted: ...", "an account with this email exists: ..."): as is.
    if ((error.status === 404 || error.status === 409) && said) problem.replaceChildren(errorBox(said));
    else refusal(error, problem, inputs, "accept this invitation");
    return;
  }
  state.invitation = null;
  if (answer.api_token?.token) {
    state.token = answer.api_token.token;
    sessionStorage.setItem(TOKEN_KEY, state.token);
  }
  try {
    await refreshMe();
    await loadOrganizations();
  } catch (error) {
    if (endSessionOn(error)) return;
  }
  notify(`Welcome to ${organizationName(answer.organization_id)}: you are ${answer.role} there.`);
  history.replaceState(null, "", `#/projects?${query({ organization_id: answer.organization_id })}`);
  route();
}

export { takeInvitationFromAddress, viewAccept };
