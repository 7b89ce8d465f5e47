// The proxydeck console: a client of the public API (/v1/...) and nothing
// else. Every read and every change is a request with the signed-in
// person's token, so roles, conflicts and limits are the API's own.
//
// This module starts it and says which page answers which address; each
// page lives in the module of what it shows (projects.js, revisions.js,
// organizations.js, ...), on the shared parts: dom.js (elements, never
// markup), api.js (the calls), nav.js (addresses and history) and
// session.js (signing in and out, refusals in words).
//
// Safety rules every module keeps (a unit test checks the first ones):
// - text from the API only ever becomes DOM text (textContent, append of
//   a string), never markup: nothing here parses a string as HTML;
// - the token lives in this tab's session storage and in memory, never in
//   a URL, a cookie or a log line; routes hold ids and page keys only.

import { takeInvitationFromAddress, viewAccept } from "./accept.js";
import { TOKEN_KEY, api, state } from "./api.js";
import { $, h, loadFailure, loading, show } from "./dom.js";
import { hashParams, route, setPages } from "./nav.js";
import { viewOrganization, viewOrganizations } from "./organizations.js";
import { viewEditProject, viewNewProject } from "./project-edit.js";
import { viewProject, viewProjects } from "./projects.js";
import { viewNewRevision } from "./revision-form.js";
import { viewDiff, viewRevision } from "./revisions.js";
import { viewRollout } from "./rollouts.js";
import { explain, failed, forgetToken, showSignIn, signOut, signedIn } from "./session.js";
import { viewTokens } from "./tokens.js";

setPages({
  // Reachable signed out: the invitation may make the account.
  open: [[/^\/accept$/, viewAccept]],
  signedIn: [
    [/^\/projects\/([^/]+)\/diff\/(\d+)\/(\d+)$/, viewDiff],
    // Before a project's page: `new` would read as a project's id.
    [/^\/projects\/new$/, viewNewProject],
    [/^\/projects\/([^/]+)\/edit$/, viewEditProject],
    [/^\/projects\/([^/]+)\/revisions\/new$/, viewNewRevision],
    [/^\/projects\/([^/]+)\/revisions\/(\d+)$/, viewRevision],
    [/^\/projects\/([^/]+)\/rollouts\/(\d+)$/, viewRollout],
    [/^\/projects\/([^/]+)$/, viewProject],
    [/^\/projects$/, viewProjects],
    [/^\/tokens$/, viewTokens],
    [/^\/organizations\/([^/]+)$/, viewOrganization],
    [/^\/organizations$/, viewOrganizations],
  ],
  beforeEach: takeInvitationFromAddress,
  signedOut: () => showSignIn(),
  failed,
});

async function start() {
  $("sign-out").addEventListener("click", signOut);
  // Fires on Back, Forward and every change of the address's #part
  // (links, typing), never on our own pushState.
  window.addEventListener("popstate", route);
  // An invitation's link: its secret leaves the address before anything
  // else happens (a reload, the history, a screenshot of the bar).
  takeInvitationFromAddress();
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) {
    route();
    return;
  }
  await resume(token);
}

/** Signs in again with the token this tab kept: one the API refuses (401)
 * is forgotten; any other failure (the service down, a reload during a
 * restart) keeps it and offers to try again. */
async function resume(token) {
  state.token = token;
  loading("your account");
  try {
    const { body } = await api("GET", "/v1/users/me");
    signedIn(body);
    route();
  } catch (error) {
    if (error.status !== 401) {
      show(h("h1", { text: "Signing in" }), loadFailure(explain(error), () => resume(token)));
      return;
    }
    forgetToken();
    if (hashParams().path === "/accept") route();
    else showSignIn(explain(error));
  }
}

start();
